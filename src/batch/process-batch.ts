import type { Database } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { answerChecked } from './answer-batch.js';
import { InvalidBatch, ValidationCrash } from './batch-errors.js';
import { type BatchOptions, NO_OPTIONS } from './batch-options.js';
import { type CheckedBatch, keyTextsOf, writeOf } from './checked-batch.js';
import { validateInSlices } from './validate-in-slices.js';
import type { ValidatedBatch } from './validate-items.js';
import { type BatchCounts, noteWrites } from './write-batch.js';

/** The batch's items checked on the event loop (a small body; a large one goes to a worker). */
export async function checkItems(
  resource: BatchResource,
  items: readonly unknown[],
  statementRows: number,
  options: BatchOptions,
): Promise<CheckedBatch> {
  let batch: ValidatedBatch;
  try {
    // In slices, so a large batch does not hold the event loop (other tenants' requests) for its whole check.
    batch = await validateInSlices(resource, items, options.skipInvalid);
  } catch (error) {
    throw new ValidationCrash(error);
  }
  return {
    items: items.length,
    errors: batch.errors,
    invalid: batch.invalid,
    rows: () => batch.rows,
    keyTexts: options.outcomes ? keyTextsOf(resource, items, batch) : undefined,
    write: writeOf(resource, batch, statementRows),
  };
}

/**
 * The batch pipeline without HTTP (the command line, demo data): validate every item, write the
 * valid batch with one statement, answer the counts. Throws InvalidBatch when any item is invalid;
 * nothing is written then.
 */
export async function processBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  items: readonly unknown[],
): Promise<BatchCounts> {
  const checked = await checkItems(resource, items, db.statementRows, NO_OPTIONS);
  const result = await answerChecked({ db }, tenantId, resource, checked, NO_OPTIONS);
  if (result.kind === 'invalid') throw new InvalidBatch(result.errors);
  if (result.written) await noteWrites(db.wrote.bind(db), resource, result.written.prepared, result.counts);
  return result.counts;
}
