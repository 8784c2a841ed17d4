import type { Queryable } from '../db/database.js';
import { KEPT_ATTEMPTS } from './webhook-streams.js';

// A stream's lease while its turn runs, and the attempt of an instance that stopped during it
// (docs/decisions/0141-leases-within-ten-seconds.md, 0142-interrupted-attempt-listed.md).

/** Renews the stream's lease while it is still this holder's. */
const RENEW_STREAM = `UPDATE webhook_streams SET held_until = now() + make_interval(secs => $4)
WHERE endpoint_id = $1 AND resource = $2 AND holder = $3
RETURNING 1 AS held`;

/** False: the stream is another instance's now (its lease ran out and it was taken over), or gone. */
export async function renewStream(
  q: Queryable,
  stream: { endpoint_id: string; resource: string },
  holder: string,
  leaseSeconds: number,
): Promise<boolean> {
  const rows = await q.query(RENEW_STREAM, [stream.endpoint_id, stream.resource, holder, leaseSeconds]);
  return rows.length > 0;
}

/** The deliveries log's `error` for an attempt whose instance stopped before recording it. */
export const INTERRUPTED_ERROR = 'instance stopped during the attempt';

/**
 * A stream taken over with a delivery under way (a claim's `interrupted`): its last attempt, made by
 * the instance that stopped, is logged as one that failed with INTERRUPTED_ERROR (no status, a
 * duration of 0: its end is unknown) and counted among the delivery's attempts, so the next one is
 * its repeat. The endpoint is not made failing and the next attempt waits for nothing: the endpoint
 * did nothing wrong. The endpoint's row is locked first, as every statement on a stream and its
 * endpoint does (src/sql/webhook-streams.ts); only this holder, and only for that delivery.
 */
const INTERRUPTED = `WITH locked AS (SELECT id FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE), marked AS (
  UPDATE webhook_streams SET failures = failures + 1
  WHERE endpoint_id = $1 AND resource = $2 AND holder = $3 AND pending_id = $4 AND EXISTS (SELECT 1 FROM locked)
  RETURNING endpoint_id, resource, pending_id, pending_count, failures
), log AS (
  INSERT INTO webhook_attempts (endpoint_id, message_id, resource, records, attempt, status_code, error, duration_ms)
  SELECT endpoint_id, pending_id, resource, pending_count, failures, NULL, $5, 0 FROM marked
), trimmed AS (
  DELETE FROM webhook_attempts WHERE endpoint_id = $1 AND EXISTS (SELECT 1 FROM marked) AND id <= (
    SELECT id FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id DESC OFFSET ${KEPT_ATTEMPTS - 1} LIMIT 1)
)
SELECT failures FROM marked`;

/** The delivery's failures counting the interrupted attempt; undefined when the stream is not this holder's. */
export async function recordInterrupted(
  q: Queryable,
  stream: { endpoint_id: string; resource: string; pending_id: string | null },
  holder: string,
): Promise<number | undefined> {
  const [row] = await q.query<{ failures: number }>(INTERRUPTED, [
    stream.endpoint_id,
    stream.resource,
    holder,
    stream.pending_id,
    INTERRUPTED_ERROR,
  ]);
  return row?.failures;
}
