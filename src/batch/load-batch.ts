import type { Database } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { InvalidBatch } from './batch-errors.js';
import { processBatch } from './process-batch.js';
import type { BatchCounts } from './write-batch.js';

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
  try {
    return await processBatch(db, tenantId, resource, items);
  } catch (error) {
    if (!(error instanceof InvalidBatch)) throw error;
    throw new Error(`invalid ${resource.name}: ${JSON.stringify(error.errors.slice(0, 3))}`);
  }
}
