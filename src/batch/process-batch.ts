import type { Database } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import { ValidationCrash } from '../http/server-errors.js';
import type { BatchResource } from './resource.js';
import { validateInSlices } from './validate-in-slices.js';
import { type ItemError, markUnknownProducts, productCodes, type ValidatedBatch } from './validate-items.js';
import { type BatchCounts, type PreparedWrite, prepareWrite, writePrepared } from './write-batch.js';
import { MISSING_PRODUCTS_SQL } from './write-sql.js';

/** A batch with invalid items: nothing was written. */
export class InvalidBatch extends Error {
  readonly errors: ItemError[];
  constructor(errors: ItemError[]) {
    super('invalid batch');
    this.name = 'InvalidBatch';
    this.errors = errors;
  }
}

/** foreign_key_violation: only the product reference can fail (the tenant exists, items follow their parent). */
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * A batch checked, wherever that was (inline, or in a worker thread for a large body): its problems,
 * or what its write needs.
 */
export interface CheckedBatch {
  /** Sorted by index; empty for a valid batch. */
  errors: ItemError[];
  /**
   * The rows as far as the missing-products query reads them (the product code at productPosition;
   * undefined for an item without a valid row). A function: a worker's batch builds them only when
   * the query runs.
   */
  rows: () => ValidatedBatch['rows'];
  /** Present when errors is empty. */
  write?: PreparedWrite;
}

async function markMissingProducts(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  batch: ValidatedBatch,
) {
  const codes = productCodes(resource, batch);
  if (codes.length === 0) return;
  const missing = await db.query<{ code: string }>(MISSING_PRODUCTS_SQL, [tenantId, codes]);
  markUnknownProducts(resource, batch, new Set(missing.map((row) => row.code)));
}

/**
 * The batch pipeline after the array rules: validate every item, write the valid batch with one
 * statement, answer the counts. Unknown products are found by the foreign key, so a valid batch costs
 * no extra round trip; only a batch that fails (on the key, or with other invalid items, whose error
 * list must be complete) pays the one query that names the unknown codes.
 * Throws InvalidBatch when any item is invalid; nothing is written then.
 */
export async function processBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  items: readonly unknown[],
): Promise<BatchCounts> {
  let batch: ValidatedBatch;
  try {
    // In slices, so a large batch does not hold the event loop (other tenants' requests) for its whole check.
    batch = await validateInSlices(resource, items);
  } catch (error) {
    throw new ValidationCrash(error);
  }
  const rows = () => batch.rows;
  if (batch.errors.length > 0) return writeChecked(db, tenantId, resource, { errors: batch.errors, rows });
  const write = prepareWrite(resource, batch.rows as FieldValue[][], db.statementRows);
  return writeChecked(db, tenantId, resource, { errors: [], rows, write });
}

/**
 * The pipeline after validation: a batch with problems is refused with them (and its unknown
 * products), a valid one written; a foreign-key failure names the unknown products.
 */
export async function writeChecked(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  checked: CheckedBatch,
): Promise<BatchCounts> {
  if (checked.errors.length > 0 || !checked.write) {
    const batch = { rows: checked.rows(), errors: checked.errors };
    await markMissingProducts(db, tenantId, resource, batch);
    throw new InvalidBatch(batch.errors);
  }
  try {
    return await writePrepared(db, tenantId, resource, checked.write);
  } catch (error) {
    if (
      resource.productPosition === undefined ||
      (error as { code?: unknown }).code !== FOREIGN_KEY_VIOLATION
    ) {
      throw error;
    }
    const batch = { rows: checked.rows(), errors: [] as ItemError[] };
    await markMissingProducts(db, tenantId, resource, batch);
    if (batch.errors.length === 0) throw error;
    throw new InvalidBatch(batch.errors);
  }
}
