import type { Database } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from './resource.js';
import { markUnknownProducts, productCodes, validateItems } from './validate-items.js';
import { type BatchCounts, writeBatch } from './write-batch.js';
import { MISSING_PRODUCTS_SQL } from './write-sql.js';

/**
 * The batch pipeline without HTTP, for the command line and demo data: the same validation, the same
 * product check, the same write. Throws with the first invalid items when the batch is invalid.
 */
export async function loadBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  items: readonly unknown[],
): Promise<BatchCounts> {
  const batch = validateItems(resource, items);
  const codes = productCodes(resource, batch);
  if (codes.length > 0) {
    const missing = await db.query<{ code: string }>(MISSING_PRODUCTS_SQL, [tenantId, codes]);
    markUnknownProducts(resource, batch, new Set(missing.map((row) => row.code)));
  }
  if (batch.errors.length > 0) {
    throw new Error(`invalid ${resource.name}: ${JSON.stringify(batch.errors.slice(0, 3))}`);
  }
  return writeBatch(db, tenantId, resource, batch.rows as FieldValue[][]);
}
