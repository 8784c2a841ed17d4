import type { Queryable } from '../db/database.js';
import { DATE_TIME_SQL_FORMAT } from '../fields/date-time.js';

// A tenant's write requests of the last 7 days (migration 019, extensions.md 14): one recorded,
// one page listed, the old ones removed.

/** One write request as it is recorded: never a body or a secret. */
export interface ActivityRecord {
  tenantId: number;
  method: string;
  /** The path without its query string. */
  path: string;
  /** The resource the request wrote or meant to write, when it names one. */
  resource: string | undefined;
  status: number;
  durationMs: number;
  items: number | undefined;
  created: number | undefined;
  updated: number | undefined;
  ignored: number | undefined;
  idempotencyKey: string | undefined;
  replayed: boolean;
  requestId: string;
  /** The first problems of a refused request, as its answer gave them (JSON text). */
  problems: string | undefined;
}

// The time of the statement, not of the transaction: in the request's own transaction it is the
// moment its write was done, which is the moment it was answered.
const INSERT = `INSERT INTO activity (tenant_id, at, method, path, resource, status, duration_ms,
  idempotency_key, replayed, request_id, problems, items, created, updated, ignored)
VALUES ($1, statement_timestamp(), $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14)`;

/** A request's row in a statement of its own: recordingParams' parameters, then the counts. */
export async function recordActivity(q: Queryable, r: ActivityRecord): Promise<void> {
  await q.query(INSERT, [
    ...recordingParams(r),
    r.items ?? null,
    r.created ?? null,
    r.updated ?? null,
    r.ignored ?? null,
  ]);
}

/**
 * A request's row as the statement that writes records it (an unkeyed batch's): everything but the
 * counts, which only the statement knows. `durationMs`: the time until the statement was sent.
 */
export type WriteActivity = Omit<ActivityRecord, 'items' | 'created' | 'updated' | 'ignored'>;

/**
 * The CTE `recorded` that a write statement adds to record its own request: one round trip, and the
 * row commits or fails with the write (there is no transaction around them to keep apart). Its
 * parameters are $first on (recordingParams); `counted`: the counts as SQL over `from`, the
 * statement's own results. The duration adds the statement's time up to the row (the row is made
 * once `from` is read whole) to the time until it was sent, as the transaction's record measured it
 * after the write; `at` is the statement's start, when the write began (the transaction's record
 * took its own INSERT's, just after the write).
 */
export function recordingCte(
  first: number,
  counted: { items: string; created: string; updated: string; ignored: string },
  from: string,
): string {
  const $ = (n: number) => `$${first + n}`;
  return `recorded AS (
  INSERT INTO activity (tenant_id, at, method, path, resource, status, duration_ms, items, created,
    updated, ignored, idempotency_key, replayed, request_id, problems)
  SELECT ${$(0)}::int, statement_timestamp(), ${$(1)}::text, ${$(2)}::text, ${$(3)}::text, ${$(4)}::smallint,
    round(${$(5)}::int + extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::int,
    ${counted.items}, ${counted.created}, ${counted.updated}, ${counted.ignored},
    ${$(6)}::text, ${$(7)}::boolean, ${$(8)}::text, ${$(9)}::jsonb
  FROM ${from}
)`;
}

/** recordingCte's parameters, in its order. */
export function recordingParams(r: WriteActivity): unknown[] {
  return [
    r.tenantId,
    r.method,
    r.path,
    r.resource ?? null,
    r.status,
    r.durationMs,
    r.idempotencyKey ?? null,
    r.replayed,
    r.requestId,
    r.problems ?? null,
  ];
}

export interface ActivityQuery {
  tenantId: number;
  limit: number;
  outcome: 'failed' | 'succeeded' | undefined;
  resource: string | undefined;
  /** Only requests recorded before this one (the id a cursor carries). */
  before: bigint | undefined;
}

const ENTRY = `json_build_object(
  'at', to_char(a.at AT TIME ZONE 'UTC', ${DATE_TIME_SQL_FORMAT}),
  'method', a.method, 'path', a.path, 'resource', a.resource, 'status', a.status,
  'duration_ms', a.duration_ms, 'items', a.items, 'created', a.created, 'updated', a.updated,
  'ignored', a.ignored, 'idempotency_key', a.idempotency_key, 'replayed', a.replayed,
  'request_id', a.request_id, 'problems', a.problems)`;

/**
 * The statement of one combination of filters: each names only its own conditions, so the planner
 * sees the partial index it can use (a condition that is true for a parameter would hide it).
 */
function pageStatement(query: ActivityQuery): { text: string; params: unknown[] } {
  const params: unknown[] = [query.tenantId, query.limit + 1];
  const where = ['a.tenant_id = $1'];
  if (query.outcome === 'failed') where.push('a.status >= 400');
  if (query.outcome === 'succeeded') where.push('a.status < 400');
  if (query.resource !== undefined) {
    params.push(query.resource);
    where.push(`a.resource = $${params.length}`);
  }
  if (query.before !== undefined) {
    params.push(query.before.toString());
    where.push(`a.id < $${params.length}::bigint`);
  }
  const text = `SELECT coalesce(json_agg(${ENTRY} ORDER BY a.id DESC) FILTER (WHERE a.n <= $2 - 1), '[]')::text AS data,
  (max(a.n) = $2) AS more, min(a.id) FILTER (WHERE a.n <= $2 - 1)::text AS last
FROM (
  SELECT a.*, row_number() OVER (ORDER BY a.id DESC) AS n FROM (
    SELECT * FROM activity a WHERE ${where.join(' AND ')} ORDER BY a.id DESC LIMIT $2
  ) a
) a`;
  return { text, params };
}

/** One page, newest first, as JSON text; `last`: the id of its oldest entry when more follow. */
export async function activityPage(
  q: Queryable,
  query: ActivityQuery,
): Promise<{ data: string; next: bigint | undefined }> {
  const { text, params } = pageStatement(query);
  const [row] = await q.query<{ data: string; more: boolean | null; last: string | null }>(text, params);
  const more = row?.more === true && row.last !== null;
  return { data: row?.data ?? '[]', next: more ? BigInt(row!.last!) : undefined };
}

/** Removes at most `piece` requests recorded before `days` ago, oldest first; how many went. */
export async function removeOldActivity(q: Queryable, days: number, piece: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH gone AS (
  DELETE FROM activity WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM activity WHERE at < now() - make_interval(days => $1) ORDER BY at LIMIT $2
  ))
  RETURNING 1
)
SELECT count(*)::int AS n FROM gone`,
    [days, piece],
  );
  return rows[0]?.n ?? 0;
}

/** Removes the hours of the written-per-hour series older than `days` days; how many went. */
export async function removeOldWrittenHours(q: Queryable, days: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH gone AS (DELETE FROM written_hours WHERE hour < now() - make_interval(days => $1) RETURNING 1)
SELECT count(*)::int AS n FROM gone`,
    [days],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Folds the slots of resource_rows (migration 019) into slot 0, a piece of tenants' resources at a
 * time: each session's slot would otherwise stay a row of its own. A slot whose row a running
 * transaction holds is left for the next round (SKIP LOCKED): folding never waits for a writer.
 */
export async function foldResourceRows(q: Queryable, piece: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH taken AS (
  DELETE FROM resource_rows WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM resource_rows WHERE slot <> 0 LIMIT $1 FOR UPDATE SKIP LOCKED
  ))
  RETURNING tenant_id, resource, n
),
folded AS (
  INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
  SELECT tenant_id, resource, 0, sum(n) FROM taken GROUP BY tenant_id, resource
  ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n
)
SELECT count(*)::int AS n FROM taken`,
    [piece],
  );
  return rows[0]?.n ?? 0;
}
