import type { Queryable } from '../db/database.js';
import { literal } from '../db/sql.js';

/**
 * The CTEs by which a statement that inserts or changes a resource's rows counts them for
 * GET /v1/overview: `counted` (created, written), then one row appended to written_deltas (migration
 * 021) with the rows it inserted (the resource's rows) and the rows it inserted or changed (the
 * current hour's records written). Every such statement of the service counts itself so: no trigger
 * counts inserts or changes (migration 022), since keeping their transition tables cost a 1,000-row
 * upsert 0.6 ms where this costs about nothing (docs/decisions/0150-writes-count-themselves.md).
 * `tenant`: the SQL of the tenant id; `from`: the CTE of the rows written; `created`: the SQL that
 * counts the inserted ones among them.
 */
function deltaCtes(resource: string, tenant: string, from: string, created: string): string {
  // MATERIALIZED: computed once, whatever reads it (a batch's activity row reads it too).
  return `counted AS MATERIALIZED (
  SELECT ${created} AS created, count(*) AS written FROM ${from}
),
deltas AS (
  INSERT INTO written_deltas (tenant_id, resource, hour, created, written)
  SELECT ${tenant}, ${literal(resource)}, date_trunc('hour', statement_timestamp(), 'UTC'), created, written
  FROM counted WHERE written > 0
)`;
}

/** A batch's or a job block's upsert: its CTE `written` has each row written, `inserted` for the new ones. */
export function countingCtes(resource: string, tenant: string): string {
  return deltaCtes(resource, tenant, 'written', 'count(*) FILTER (WHERE inserted)');
}

/** A statement that changes rows and inserts none: `from` is its CTE returning one row per row changed. */
export function changeCountingCtes(resource: string, tenant: string, from: string): string {
  return deltaCtes(resource, tenant, from, '0::bigint');
}

/**
 * Folds a piece of written_deltas into slot 0 of resource_rows and written_hours: one statement, so a
 * reader of the overview sees each count in one place or the other, never both. Two instances folding
 * at once cannot count a row twice: a row is folded by the statement that deleted it. How many went.
 */
export async function foldWrittenDeltas(q: Queryable, piece: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH taken AS (
  DELETE FROM written_deltas WHERE ctid = ANY (ARRAY(SELECT ctid FROM written_deltas LIMIT $1))
  RETURNING tenant_id, resource, hour, created, written
),
rows_folded AS (
  INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
  SELECT tenant_id, resource, 0, sum(created) FROM taken GROUP BY tenant_id, resource HAVING sum(created) <> 0
  ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n
),
hours_folded AS (
  INSERT INTO written_hours AS h (tenant_id, hour, resource, slot, n)
  SELECT tenant_id, hour, resource, 0, sum(written) FROM taken GROUP BY tenant_id, hour, resource
  ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = h.n + EXCLUDED.n
)
SELECT count(*)::int AS n FROM taken`,
    [piece],
  );
  return rows[0]?.n ?? 0;
}
