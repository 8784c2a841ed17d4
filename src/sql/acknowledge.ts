import type { Queryable } from '../db/database.js';
import { NOW_UTC } from '../fields/date-time.js';
import { FEED_MOVE } from './changes.js';
import { changeCountingCtes } from './written-counts.js';

/**
 * Acknowledges the tenant's given deliveries that are still pending or rejected (clearing the
 * rejection: extensions.md 13) and answers the given codes the tenant has no delivery of. The pending rows are locked in code order ("C" collation, FOR UPDATE
 * under the ORDER BY) before they are updated, so two calls with overlapping codes wait for each
 * other instead of deadlocking. The UPDATE runs although the final SELECT does not read it: a
 * data-modifying WITH always runs to completion. Deliveries acknowledged before keep their date (and
 * their place in the change feed); a new acknowledgement moves the delivery to this transaction's
 * place there (FEED_MOVE, migrations 008 and 013). It counts the deliveries it changed for
 * GET /v1/overview (changeCountingCtes).
 */
const ACKNOWLEDGE_SQL = `WITH given AS (
  SELECT DISTINCT code FROM unnest($2::text[]) AS g(code)
), locked AS (
  SELECT d.code FROM deliveries d JOIN given USING (code)
  WHERE d.tenant_id = $1 AND d.acknowledged_at IS NULL
  ORDER BY d.code COLLATE "C"
  FOR UPDATE OF d
), acknowledged AS (
  UPDATE deliveries d SET acknowledged_at = ${NOW_UTC}, rejected_at = NULL, rejection_reason = NULL, ${FEED_MOVE}
  FROM locked WHERE d.tenant_id = $1 AND d.code = locked.code
  RETURNING d.code
),
${changeCountingCtes('deliveries', '$1', 'acknowledged')}
SELECT given.code
FROM given
WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant_id = $1 AND d.code = given.code)
ORDER BY given.code COLLATE "C"`;

/** Marks the deliveries of these codes acknowledged; returns the codes not found, in "C" order. */
export async function acknowledgeDeliveries(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
): Promise<string[]> {
  const rows = await db.query<{ code: string }>(ACKNOWLEDGE_SQL, [tenantId, codes]);
  return rows.map((row) => row.code);
}
