import type { Queryable } from '../db/database.js';
import { NOW_UTC } from '../fields/date-time.js';
import { FEED_MOVE } from './changes.js';
import { changeCountingCtes } from './written-counts.js';

/*
 * Deliveries the ERP cannot take (extensions.md 13). Like the acknowledgement (./acknowledge.ts), each
 * statement locks the rows it changes in code order ("C" collation) before it changes them, so calls
 * with overlapping codes, and an acknowledgement racing a rejection, wait for each other instead of
 * deadlocking; a row that another call acknowledged meanwhile no longer matches once the lock is
 * granted (READ COMMITTED looks at it again), so it ends in exactly one state. Every change moves the
 * delivery to this transaction's place in the change feed (FEED_MOVE) and is counted for
 * GET /v1/overview (changeCountingCtes).
 */

/**
 * Rejects the tenant's given deliveries that are not acknowledged (pending, or rejected before: the
 * reason and date are replaced); a code given twice takes its last reason. Answers the given codes
 * that were not rejected: those of no delivery, or of an acknowledged one.
 */
const REJECT_SQL = `WITH given AS (
  SELECT DISTINCT ON (code COLLATE "C") code, reason
  FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS g(code, reason, n)
  ORDER BY code COLLATE "C", n DESC
), locked AS (
  SELECT d.code FROM deliveries d JOIN given USING (code)
  WHERE d.tenant_id = $1 AND d.acknowledged_at IS NULL
  ORDER BY d.code COLLATE "C"
  FOR UPDATE OF d
), rejected AS (
  UPDATE deliveries d SET rejected_at = ${NOW_UTC}, rejection_reason = given.reason, ${FEED_MOVE}
  FROM locked JOIN given USING (code)
  WHERE d.tenant_id = $1 AND d.code = locked.code AND d.acknowledged_at IS NULL
  RETURNING d.code
),
${changeCountingCtes('deliveries', '$1', 'rejected')}
SELECT given.code
FROM given
WHERE NOT EXISTS (SELECT 1 FROM rejected r WHERE r.code = given.code)
ORDER BY given.code COLLATE "C"`;

/** Rejects deliveries, each with its reason (codes[i] with reasons[i]); returns the codes not rejected, in "C" order. */
export async function rejectDeliveries(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
  reasons: readonly string[],
): Promise<string[]> {
  const rows = await db.query<{ code: string }>(REJECT_SQL, [tenantId, codes, reasons]);
  return rows.map((row) => row.code);
}

/**
 * Puts the tenant's given rejected deliveries back in the pending list (rejected_at and
 * rejection_reason null). Answers the given codes that name no rejected delivery.
 */
const REQUEUE_SQL = `WITH given AS (
  SELECT DISTINCT code FROM unnest($2::text[]) AS g(code)
), locked AS (
  SELECT d.code FROM deliveries d JOIN given USING (code)
  WHERE d.tenant_id = $1 AND d.acknowledged_at IS NULL AND d.rejected_at IS NOT NULL
  ORDER BY d.code COLLATE "C"
  FOR UPDATE OF d
), requeued AS (
  UPDATE deliveries d SET rejected_at = NULL, rejection_reason = NULL, ${FEED_MOVE}
  FROM locked
  WHERE d.tenant_id = $1 AND d.code = locked.code AND d.acknowledged_at IS NULL AND d.rejected_at IS NOT NULL
  RETURNING d.code
),
${changeCountingCtes('deliveries', '$1', 'requeued')}
SELECT given.code
FROM given
WHERE NOT EXISTS (SELECT 1 FROM requeued r WHERE r.code = given.code)
ORDER BY given.code COLLATE "C"`;

/** Requeues rejected deliveries; returns the codes that named no rejected delivery, in "C" order. */
export async function requeueDeliveries(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
): Promise<string[]> {
  const rows = await db.query<{ code: string }>(REQUEUE_SQL, [tenantId, codes]);
  return rows.map((row) => row.code);
}
