import type { Queryable, Transaction } from '../db/database.js';
import { DATE_TIME_SQL_FORMAT } from '../fields/date-time.js';

// A tenant's webhook endpoints and their positions in the change feed (migration 016, extensions.md 11).
// Every statement names the tenant: an id of another tenant's endpoint finds nothing.

/** A timestamptz as the API's DateTime (UTC, no zone). */
const dateTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', ${DATE_TIME_SQL_FORMAT})`;

/** One endpoint's position in one resource's feed, as a cursor carries it. */
export interface StreamPosition {
  resource: string;
  xid: string;
  key: string[] | null;
  /** When the position was handed out (microseconds since 1970), null when not known. */
  t: string | null;
  generation: number;
}

export interface EndpointRow {
  id: string;
  url: string;
  resources: string[];
  description: string | null;
  batch_size: number;
  status: 'active' | 'paused' | 'disabled';
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
  positions: StreamPosition[];
}

const SELECT_ENDPOINTS = `SELECT e.id, e.url, e.resources, e.description, e.batch_size, e.status, e.disabled_reason,
       ${dateTime('e.failing_since')} AS failing_since, ${dateTime('e.created_at')} AS created_at,
       COALESCE((SELECT json_agg(json_build_object('resource', s.resource, 'xid', s.position_xid::text,
                   'key', s.position_key, 't', s.position_t::text, 'generation', s.generation))
                 FROM webhook_streams s WHERE s.endpoint_id = e.id), '[]'::json) AS positions
FROM webhook_endpoints e
WHERE e.tenant_id = $1`;

export async function selectEndpoints(q: Queryable, tenantId: number): Promise<EndpointRow[]> {
  return q.query<EndpointRow>(`${SELECT_ENDPOINTS}\nORDER BY e.created_at, e.id`, [tenantId]);
}

export async function selectEndpoint(
  q: Queryable,
  tenantId: number,
  id: string,
): Promise<EndpointRow | undefined> {
  const [row] = await q.query<EndpointRow>(`${SELECT_ENDPOINTS} AND e.id = $2`, [tenantId, id]);
  return row;
}

/**
 * Creates of one tenant wait for each other (the count below must see the one before): the tenant's
 * row locked FOR NO KEY UPDATE, which the foreign keys' KEY SHARE locks of its batches do not wait for.
 */
const LOCK_TENANT = 'SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE';
const COUNT = 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE tenant_id = $1';

export async function lockTenantEndpoints(tx: Transaction, tenantId: number): Promise<number> {
  await tx.query(LOCK_TENANT, [tenantId]);
  const [row] = await tx.query<{ n: number }>(COUNT, [tenantId]);
  return row!.n;
}

export interface NewEndpoint {
  id: string;
  tenantId: number;
  url: string;
  resources: string[];
  description: string | null;
  batchSize: number;
  sealedSecret: string;
}

const INSERT_ENDPOINT = `INSERT INTO webhook_endpoints (id, tenant_id, url, resources, description, batch_size, status, secret)
VALUES ($1, $2, $3, $4::text[], $5, $6, 'active', $7)`;

export async function insertEndpoint(q: Queryable, endpoint: NewEndpoint): Promise<void> {
  await q.query(INSERT_ENDPOINT, [
    endpoint.id,
    endpoint.tenantId,
    endpoint.url,
    endpoint.resources,
    endpoint.description,
    endpoint.batchSize,
    endpoint.sealedSecret,
  ]);
}

/**
 * Streams of an endpoint for resources it did not have, each starting at the start of the feed or
 * at its frontier now: the xmin of this statement's snapshot, before which every transaction has
 * ended and at or after which every one still running or to come takes its place (src/sql/changes.ts).
 */
const INSERT_STREAMS = `INSERT INTO webhook_streams (endpoint_id, resource, tenant_id, position_xid, position_key, position_t, generation)
SELECT $1, r, $2,
       CASE WHEN $3::boolean THEN '0'::xid8 ELSE pg_snapshot_xmin(pg_current_snapshot()) END,
       NULL, (extract(epoch FROM clock_timestamp()) * 1000000)::int8, $4
FROM unnest($5::text[]) r
ON CONFLICT (endpoint_id, resource) DO NOTHING`;

export async function insertStreams(
  q: Queryable,
  endpointId: string,
  tenantId: number,
  resources: readonly string[],
  fromStart: boolean,
  generation: number,
): Promise<void> {
  await q.query(INSERT_STREAMS, [endpointId, tenantId, fromStart, generation, resources]);
}

const DELETE_STREAMS = `DELETE FROM webhook_streams
WHERE endpoint_id = $1 AND tenant_id = $2 AND NOT (resource = ANY ($3::text[]))`;

/** Drops the streams of resources the endpoint no longer has. */
export async function deleteOtherStreams(
  q: Queryable,
  endpointId: string,
  tenantId: number,
  kept: readonly string[],
): Promise<void> {
  await q.query(DELETE_STREAMS, [endpointId, tenantId, kept]);
}

export interface EndpointUpdate {
  url?: string;
  resources?: string[];
  description?: string | null;
  batchSize?: number;
  status?: 'active' | 'paused';
}

/**
 * Changes the given fields. Set active again (from paused or disabled), an endpoint forgets its
 * failures and disabling and is due at once: it resumes with the first change it has not taken (its
 * streams' positions never moved). Set active while active, it keeps its failures and backoff.
 */
const UPDATE_ENDPOINT = `WITH prior AS (
  SELECT status AS was FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2
), updated AS (
  UPDATE webhook_endpoints SET
    url = COALESCE($3, url),
    resources = COALESCE($4::text[], resources),
    description = CASE WHEN $5::boolean THEN $6 ELSE description END,
    batch_size = COALESCE($7, batch_size),
    status = COALESCE($8, status),
    failing_since = CASE WHEN $8 = 'active' AND status <> 'active' THEN NULL ELSE failing_since END,
    disabled_reason = CASE WHEN $8 IS NOT NULL THEN NULL ELSE disabled_reason END
  WHERE tenant_id = $1 AND id = $2
  RETURNING id
), due AS (
  UPDATE webhook_streams SET failures = 0, next_attempt_at = now()
  WHERE endpoint_id = $2 AND $8 = 'active' AND EXISTS (SELECT 1 FROM updated)
    AND EXISTS (SELECT 1 FROM prior WHERE was <> 'active')
)
SELECT id FROM updated`;

export async function updateEndpoint(
  q: Queryable,
  tenantId: number,
  id: string,
  update: EndpointUpdate,
): Promise<boolean> {
  const rows = await q.query(UPDATE_ENDPOINT, [
    tenantId,
    id,
    update.url ?? null,
    update.resources ?? null,
    update.description !== undefined,
    update.description ?? null,
    update.batchSize ?? null,
    update.status ?? null,
  ]);
  return rows.length > 0;
}

const DELETE_ENDPOINT = 'DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 RETURNING id';

export async function deleteEndpoint(q: Queryable, tenantId: number, id: string): Promise<boolean> {
  return (await q.query(DELETE_ENDPOINT, [tenantId, id])).length > 0;
}

/** The old secret keeps signing for the next 24 hours, beside the new one. */
const ROTATE = `UPDATE webhook_endpoints
SET previous_secret = secret, previous_secret_until = now() + interval '24 hours', secret = $3
WHERE tenant_id = $1 AND id = $2
RETURNING id`;

export async function rotateSecret(
  q: Queryable,
  tenantId: number,
  id: string,
  sealed: string,
): Promise<boolean> {
  return (await q.query(ROTATE, [tenantId, id, sealed])).length > 0;
}

/**
 * Moves a stream to a position and drops the delivery under way: an attempt still in flight finds
 * its delivery gone and records nothing (src/sql/webhook-streams.ts). A new origin: the position may
 * go back, on purpose, and no instance takes that for history the database lost (migration 018).
 */
const REPLAY = `UPDATE webhook_streams SET
  position_xid = $4::xid8, position_key = $5::text[], position_t = $6::int8, generation = $7,
  position_origin = gen_random_uuid(),
  pending_id = NULL, pending_xid = NULL, pending_key = NULL, pending_count = NULL, pending_t = NULL,
  failures = 0, next_attempt_at = now()
WHERE tenant_id = $1 AND endpoint_id = $2 AND resource = $3
RETURNING resource`;

export async function replayStream(
  q: Queryable,
  tenantId: number,
  id: string,
  position: StreamPosition,
): Promise<boolean> {
  const rows = await q.query(REPLAY, [
    tenantId,
    id,
    position.resource,
    position.xid,
    position.key,
    position.t,
    position.generation,
  ]);
  return rows.length > 0;
}

/**
 * POST /v1/webhooks/{id}/retry: a disabled endpoint is active again (its failures and disabling
 * forgotten, as PATCH does), and each stream waiting for its next attempt is due now. An active
 * endpoint keeps its failures: a retry that fails too waits the next step of the schedule. A paused
 * one stays paused (docs/decisions/0137-webhook-retry-now.md). The endpoint's row first, then its
 * streams, as every statement here takes them.
 */
const RETRY = `WITH prior AS (
  SELECT status AS was FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE
), endpoint AS (
  UPDATE webhook_endpoints SET status = 'active', failing_since = NULL, disabled_reason = NULL
  WHERE tenant_id = $1 AND id = $2 AND status = 'disabled'
  RETURNING id
), due AS (
  UPDATE webhook_streams SET next_attempt_at = now(),
    failures = CASE WHEN EXISTS (SELECT 1 FROM endpoint) THEN 0 ELSE failures END
  WHERE endpoint_id = $2 AND tenant_id = $1 AND EXISTS (SELECT 1 FROM prior)
    AND (next_attempt_at > now() OR EXISTS (SELECT 1 FROM endpoint))
)
SELECT was FROM prior`;

/** False when the tenant has no such endpoint. */
export async function retryNow(q: Queryable, tenantId: number, id: string): Promise<boolean> {
  return (await q.query(RETRY, [tenantId, id])).length > 0;
}

export interface AttemptRow {
  id: string;
  resource: string;
  records: number;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  attemptedAt: string;
}

const SELECT_ATTEMPTS = `SELECT a.message_id AS "id", a.resource, a.records, a.attempt, a.status_code AS "statusCode",
       a.error, a.duration_ms AS "durationMs", ${dateTime('a.attempted_at')} AS "attemptedAt"
FROM webhook_attempts a
WHERE a.endpoint_id = $1
ORDER BY a.id DESC
LIMIT $2`;

/** The latest attempts of an endpoint (the caller checked it is the tenant's), newest first. */
export async function selectAttempts(q: Queryable, endpointId: string, limit: number): Promise<AttemptRow[]> {
  return q.query<AttemptRow>(SELECT_ATTEMPTS, [endpointId, limit]);
}

/** The secrets that sign an endpoint's deliveries now, sealed, the newest first. */
const SELECT_SECRETS = `SELECT e.url, e.secret, CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous
FROM webhook_endpoints e WHERE e.tenant_id = $1 AND e.id = $2`;

export async function selectSigning(
  q: Queryable,
  tenantId: number,
  id: string,
): Promise<{ url: string; secret: string; previous: string | null } | undefined> {
  const [row] = await q.query<{ url: string; secret: string; previous: string | null }>(SELECT_SECRETS, [
    tenantId,
    id,
  ]);
  return row;
}
