import type { Database } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { answerChecked } from './answer-batch.js';
import { NO_OPTIONS } from './batch-options.js';
import { checkItems } from './checked-batch.js';
import { type BatchCounts, noteWrites } from './write-batch.js';

/**
 * The batch pipeline without HTTP, for the command line and demo data: the same validation, the same
 * product check, the same write (one statement), the counts. Throws with the first invalid items
 * when the batch is invalid; nothing is written then.
 */
export async function loadBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  items: readonly unknown[],
): Promise<BatchCounts> {
  const checked = await checkItems(resource, items, db.statementRows, NO_OPTIONS);
  const result = await answerChecked({ db }, tenantId, resource, checked, NO_OPTIONS);
  if (result.kind === 'invalid') {
    throw new Error(`invalid ${resource.name}: ${JSON.stringify(result.errors.slice(0, 3))}`);
  }
  if (result.written) await noteWrites(db.wrote.bind(db), resource, result.written.prepared, result.counts);
  return result.counts;
}
