import type { Queryable } from '../db/database.js';
import { ident, literal } from '../db/sql.js';
import { feedResources } from '../resources/feed.js';
import { feedIndexCondition } from './changes.js';

// The delivery side of webhooks (migration 016, src/webhooks/delivery-work.ts): which streams (an
// endpoint and one resource) are due, who sends for them, and what each attempt did. Every write
// that follows an attempt is guarded by the holder and the delivery's id: an instance whose lease
// expired under it (stalled, or its stream replayed meanwhile) changes nothing.

/**
 * Per resource, the rows of the tenant's feed after the stream's position that the feed serves
 * already (below the snapshot's xmin), as `probe` wraps them (EXISTS, or the first one's time): one
 * index probe of (tenant_id, change_xid, key) per stream, so a round over a thousand idle endpoints
 * is one cheap statement.
 */
function afterPosition(probe: (rows: string, order: string) => string, otherwise: string): string {
  const branches = feedResources.map((feed) => {
    const { table, key, fields } = feed.source;
    const keys = key.map((name) => `c.${ident(name)}`).join(', ');
    const positionKeys = key
      .map((name, at) => `s.position_key[${at + 1}]::${fields[name]!.sqlType}`)
      .join(', ');
    const rows = (position: string) => `FROM ${ident(table)} c
        WHERE c.tenant_id = s.tenant_id AND ${feedIndexCondition('c')}
          AND c.change_xid < pg_snapshot_xmin(pg_current_snapshot()) AND ${position}`;
    const order = `c.change_xid, ${keys}`;
    return `WHEN ${literal(feed.name)} THEN CASE WHEN s.position_key IS NULL
      THEN ${probe(rows('c.change_xid >= s.position_xid'), order)}
      ELSE ${probe(rows(`(c.change_xid, ${keys}) > (s.position_xid, ${positionKeys})`), order)} END`;
  });
  return `CASE s.resource\n    ${branches.join('\n    ')}\n    ELSE ${otherwise} END`;
}

/**
 * Whether the stream has rows to send: the first row in the index's order, never EXISTS. The planner
 * strips an EXISTS of its ORDER BY and LIMIT and, expecting thousands of a tenant's rows, chose to
 * scan the table for the first match; when there was none it read every row, per stream: a round over
 * 100 endpoints took a second on PostgreSQL.
 */
const hasNewChanges = () =>
  afterPosition((rows, order) => `(SELECT true ${rows} ORDER BY ${order} LIMIT 1) IS NOT NULL`, 'false');
/** When the first row the stream has not sent changed. */
const firstUnsentAt = () =>
  afterPosition((rows, order) => `(SELECT c.changed_at ${rows} ORDER BY ${order} LIMIT 1)`, 'NULL');

/** A stream this instance now sends for, with what its turn needs of the endpoint. */
export interface ClaimedStream {
  endpoint_id: string;
  resource: string;
  tenant_id: number;
  position_xid: string;
  position_key: string[] | null;
  position_t: string | null;
  generation: number;
  /** Which setting of the position this is (migration 018): a replay, or the stream made anew, changes it. */
  position_origin: string;
  pending_id: string | null;
  pending_xid: string | null;
  pending_key: string[] | null;
  pending_count: number | null;
  pending_t: string | null;
  failures: number;
  url: string;
  batch_size: number;
  secret: string;
  previous_secret: string | null;
  /**
   * The stream was still held by an instance whose lease ran out with a delivery under way: that
   * instance stopped during the attempt (src/sql/webhook-takeover.ts).
   */
  interrupted: boolean;
}

/**
 * Takes up to $2 due streams of active endpoints that have something to send (a delivery under way,
 * or new changes), none held by a live instance and none of the tenants in $3 (those at their bound
 * in this instance), the longest due first; holds them for $4 seconds. A stream whose expired lease
 * still names a holder, with a delivery under way, is `interrupted`: every turn that ends lets its
 * stream go, so that holder stopped between the delivery's start and its record.
 */
const CLAIM = `WITH due AS (
  SELECT s.endpoint_id, s.resource, (s.holder IS NOT NULL AND s.pending_id IS NOT NULL) AS interrupted
  FROM webhook_streams s JOIN webhook_endpoints e ON e.id = s.endpoint_id
  WHERE e.status = 'active'
    AND s.next_attempt_at <= now()
    AND (s.held_until IS NULL OR s.held_until <= now())
    AND NOT (s.tenant_id = ANY ($3::int[]))
    AND (s.pending_id IS NOT NULL OR ${hasNewChanges()})
  ORDER BY s.next_attempt_at
  LIMIT $2
  FOR UPDATE OF s SKIP LOCKED
)
UPDATE webhook_streams s SET holder = $1, held_until = now() + make_interval(secs => $4)
FROM due, webhook_endpoints e
WHERE s.endpoint_id = due.endpoint_id AND s.resource = due.resource AND e.id = s.endpoint_id
RETURNING s.endpoint_id, s.resource, s.tenant_id, s.position_xid::text, s.position_key, s.position_t::text,
  s.generation, s.position_origin::text, s.pending_id, s.pending_xid::text, s.pending_key, s.pending_count, s.pending_t::text, s.failures,
  e.url, e.batch_size, e.secret,
  CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous_secret, due.interrupted`;

export async function claimStreams(
  q: Queryable,
  holder: string,
  limit: number,
  busyTenants: readonly number[],
  leaseSeconds: number,
): Promise<ClaimedStream[]> {
  return q.query<ClaimedStream>(CLAIM, [holder, limit, busyTenants, leaseSeconds]);
}

/**
 * The delivery about to be sent, recorded before its first attempt (a repeat carries its id), only
 * while the stream is still where the turn read its page: a replay in between moved it, and the page
 * read before it must not be sent.
 */
const BEGIN_DELIVERY = `UPDATE webhook_streams SET
  pending_id = $4, pending_xid = $5::xid8, pending_key = $6::text[], pending_count = $7, pending_t = $8::int8,
  failures = 0, held_until = now() + make_interval(secs => $9)
WHERE endpoint_id = $1 AND resource = $2 AND holder = $3
  AND pending_id IS NULL AND position_xid = $10::xid8 AND position_key IS NOT DISTINCT FROM $11::text[]
RETURNING 1 AS held`;

export interface Delivery {
  id: string;
  xid: string;
  key: string[];
  count: number;
  t: string;
}

export async function beginDelivery(
  q: Queryable,
  stream: { endpoint_id: string; resource: string; position_xid: string; position_key: string[] | null },
  holder: string,
  delivery: Delivery,
  leaseSeconds: number,
): Promise<boolean> {
  const rows = await q.query(BEGIN_DELIVERY, [
    stream.endpoint_id,
    stream.resource,
    holder,
    delivery.id,
    delivery.xid,
    delivery.key,
    delivery.count,
    delivery.t,
    leaseSeconds,
    stream.position_xid,
    stream.position_key,
  ]);
  return rows.length > 0;
}

/** A repeat about to be attempted: its stream held for another lease, while it is still this one's. */
const RENEW = `UPDATE webhook_streams SET held_until = now() + make_interval(secs => $5)
WHERE endpoint_id = $1 AND resource = $2 AND holder = $3 AND pending_id = $4
RETURNING 1 AS held`;

export async function renewDelivery(
  q: Queryable,
  stream: { endpoint_id: string; resource: string },
  holder: string,
  deliveryId: string,
  leaseSeconds: number,
): Promise<boolean> {
  return (
    (await q.query(RENEW, [stream.endpoint_id, stream.resource, holder, deliveryId, leaseSeconds])).length > 0
  );
}

/** The deliveries log keeps this many attempts of each endpoint. */
export const KEPT_ATTEMPTS = 100;

export interface AttemptRecord {
  messageId: string;
  records: number;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Logs an attempt and trims the endpoint's log to the latest KEPT_ATTEMPTS. Only while the stream is
 * still this holder's (as the statement found it): one whose lease ran out under it was taken over,
 * and its new holder logged the attempt as interrupted already (src/sql/webhook-takeover.ts), so an
 * attempt is never listed twice.
 */
const STILL_HELD =
  'EXISTS (SELECT 1 FROM webhook_streams WHERE endpoint_id = $1 AND resource = $2 AND holder = $3)';
const LOG = `log AS (
  INSERT INTO webhook_attempts (endpoint_id, message_id, resource, records, attempt, status_code, error, duration_ms)
  SELECT $1::text, $4::text, $2::text, $6::int, $7::int, $8::int, $9::text, $10::int
  -- An endpoint deleted during the attempt has no log to write to.
  WHERE $11::boolean AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1) AND ${STILL_HELD}
), trimmed AS (
  DELETE FROM webhook_attempts WHERE endpoint_id = $1 AND $11::boolean AND ${STILL_HELD} AND id <= (
    SELECT id FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id DESC OFFSET ${KEPT_ATTEMPTS - 1} LIMIT 1)
)`;

/**
 * Every statement that changes a stream and its endpoint locks the endpoint first, as PATCH and DELETE
 * do (the endpoint's row, then its streams): two orders would deadlock. The lock is taken before the
 * stream's row is (an uncorrelated subquery runs before the first row qualifies); an endpoint deleted
 * meanwhile is not found, and nothing is written.
 */
const LOCK_ENDPOINT = `locked AS (SELECT id FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE)`;

/**
 * The delivery was taken: the position moves past its last record, the endpoint is no longer
 * failing, and the stream stays held ($5 seconds more) for its next delivery, or is let go ($13).
 * Answers the endpoint
 * as it is now (a PATCH or a rotation during the turn applies to its next delivery).
 */
const DELIVERED = `WITH ${LOCK_ENDPOINT}, moved AS (
  UPDATE webhook_streams SET
    position_xid = pending_xid, position_key = pending_key, position_t = pending_t, generation = $12,
    pending_id = NULL, pending_xid = NULL, pending_key = NULL, pending_count = NULL, pending_t = NULL,
    failures = 0, next_attempt_at = now(),
    holder = CASE WHEN $13::boolean THEN NULL ELSE holder END,
    held_until = CASE WHEN $13::boolean THEN NULL ELSE now() + make_interval(secs => $5) END
  WHERE endpoint_id = $1 AND resource = $2 AND holder = $3 AND pending_id = $4 AND EXISTS (SELECT 1 FROM locked)
  RETURNING endpoint_id
), recovered AS (
  UPDATE webhook_endpoints SET failing_since = NULL
  WHERE id = $1 AND failing_since IS NOT NULL AND EXISTS (SELECT 1 FROM moved)
), ${LOG}
SELECT EXISTS (SELECT 1 FROM moved) AS moved, e.status, e.url, e.batch_size, e.secret,
       CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous_secret
FROM (SELECT 1) one LEFT JOIN webhook_endpoints e ON e.id = $1`;

const attemptParams = (record: AttemptRecord, logged: boolean) => [
  record.records,
  record.attempt,
  record.statusCode,
  record.error,
  record.durationMs,
  logged,
];

/** Whether the stream moved on (false: it was replayed or taken over meanwhile), and the endpoint now. */
export interface AfterDelivery {
  moved: boolean;
  /** The endpoint now (null when it was deleted). */
  status: string | null;
  url: string | null;
  batch_size: number | null;
  secret: string | null;
  previous_secret: string | null;
}

export async function recordDelivered(
  q: Queryable,
  stream: { endpoint_id: string; resource: string },
  holder: string,
  record: AttemptRecord,
  /** release: let the stream go in the same statement (the turn read all there was). */
  options: { leaseSeconds: number; generation: number; logged: boolean; release: boolean },
): Promise<AfterDelivery> {
  const [row] = await q.query<AfterDelivery>(DELIVERED, [
    stream.endpoint_id,
    stream.resource,
    holder,
    record.messageId,
    options.leaseSeconds,
    ...attemptParams(record, options.logged),
    options.generation,
    options.release,
  ]);
  return row!;
}

/** Why an endpoint was disabled by its failures. */
export const GONE_REASON = 'The endpoint answered 410 Gone';
export const FAILED_TOO_LONG_REASON = 'Every attempt failed for 3 days';

/**
 * The attempt failed: the stream is let go until its next attempt ($5 seconds on), the endpoint is
 * failing since its first failure, and disabled when $12 (the endpoint answered 410) or when it has
 * been failing for $13 seconds (3 days, src/webhooks/retry-schedule.ts). The endpoint's row is locked
 * first, as every statement here does (LOCK_ENDPOINT), and read as it was: whether this failure is the
 * one that made it failing, or disabled it, is told once, by the statement that made it so
 * (docs/decisions/0138-webhook-transitions-told-once.md).
 */
const FAILED = `WITH locked AS (
  SELECT id, status AS was_status, failing_since AS was_failing_since
  FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE
), failed AS (
  UPDATE webhook_streams SET failures = failures + 1, next_attempt_at = now() + make_interval(secs => $5),
    holder = NULL, held_until = NULL
  WHERE endpoint_id = $1 AND resource = $2 AND holder = $3 AND pending_id = $4 AND EXISTS (SELECT 1 FROM locked)
  RETURNING endpoint_id
), endpoint AS (
  UPDATE webhook_endpoints SET
    failing_since = COALESCE(failing_since, now()),
    status = CASE WHEN $12::boolean OR failing_since <= now() - make_interval(secs => $13) THEN 'disabled' ELSE status END,
    disabled_reason = CASE
      WHEN $12::boolean THEN ${literal(GONE_REASON)}
      WHEN failing_since <= now() - make_interval(secs => $13) THEN ${literal(FAILED_TOO_LONG_REASON)}
      ELSE disabled_reason END
  WHERE id = $1 AND EXISTS (SELECT 1 FROM failed)
  RETURNING status, disabled_reason
), ${LOG}
SELECT e.status, e.disabled_reason,
  (l.was_failing_since IS NULL) AS started_failing,
  (e.status = 'disabled' AND l.was_status <> 'disabled') AS disabled
FROM endpoint e, locked l`;

/** What a failure did to the endpoint (none of it when the stream was replayed or taken over meanwhile). */
export interface AfterFailure {
  /** The endpoint's status now; null when the failure was not recorded. */
  status: string | null;
  disabled_reason: string | null;
  /** This failure is the first of the endpoint's failures going on now. */
  started_failing: boolean;
  /** This failure disabled the endpoint. */
  disabled: boolean;
}

export async function recordFailed(
  q: Queryable,
  stream: { endpoint_id: string; resource: string },
  holder: string,
  record: AttemptRecord,
  options: { retryInSeconds: number; gone: boolean; disableAfterSeconds: number },
): Promise<AfterFailure> {
  const [row] = await q.query<AfterFailure>(FAILED, [
    stream.endpoint_id,
    stream.resource,
    holder,
    record.messageId,
    options.retryInSeconds,
    ...attemptParams(record, true),
    options.gone,
    options.disableAfterSeconds,
  ]);
  return row ?? { status: null, disabled_reason: null, started_failing: false, disabled: false };
}

/** Lets a stream go: due at once for whichever instance looks next. */
const RELEASE = `UPDATE webhook_streams SET holder = NULL, held_until = NULL
WHERE endpoint_id = $1 AND resource = $2 AND holder = $3`;

export async function releaseStream(
  q: Queryable,
  stream: { endpoint_id: string; resource: string },
  holder: string,
): Promise<void> {
  await q.query(RELEASE, [stream.endpoint_id, stream.resource, holder]);
}

/** Every stream this instance holds, let go when it closes: another instance takes them at once. */
const RELEASE_ALL = 'UPDATE webhook_streams SET holder = NULL, held_until = NULL WHERE holder = $1';

export async function releaseAllStreams(q: Queryable, holder: string): Promise<void> {
  await q.query(RELEASE_ALL, [holder]);
}

/**
 * An endpoint whose streams cannot go on: its position is from a history the database no longer
 * has (a restore). Disabled with the reason; a replay (or setting it active) is the way on.
 */
const DISABLE = `WITH prior AS (SELECT status AS was FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE)
UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1
RETURNING (SELECT was FROM prior) <> 'disabled' AS disabled`;

/** True when this disabled the endpoint (it was not disabled already). */
export async function disableEndpoint(q: Queryable, endpointId: string, reason: string): Promise<boolean> {
  const [row] = await q.query<{ disabled: boolean }>(DISABLE, [endpointId, reason]);
  return row?.disabled ?? false;
}

/**
 * Figures for the metrics: endpoints by status, and the age of the oldest change an active endpoint
 * has not taken yet (0 when every one is up to date).
 */
const FIGURES = `SELECT
  (SELECT count(*)::int FROM webhook_endpoints WHERE status = 'active') AS active,
  (SELECT count(*)::int FROM webhook_endpoints WHERE status = 'paused') AS paused,
  (SELECT count(*)::int FROM webhook_endpoints WHERE status = 'disabled') AS disabled,
  COALESCE((SELECT extract(epoch FROM now() - min(${firstUnsentAt()}))
     FROM webhook_streams s JOIN webhook_endpoints e ON e.id = s.endpoint_id
     WHERE e.status = 'active'), 0)::float8 AS oldest_unsent_seconds`;

export interface WebhookFigures {
  active: number;
  paused: number;
  disabled: number;
  oldest_unsent_seconds: number;
}

export async function webhookFigures(q: Queryable): Promise<WebhookFigures> {
  const [row] = await q.query<WebhookFigures>(FIGURES);
  return row!;
}
