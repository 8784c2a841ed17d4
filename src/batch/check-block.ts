import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { type FieldError, ValidationCrash } from './batch-errors.js';
import type { BatchOptions } from './batch-options.js';
import type { CheckedBatch } from './checked.js';
import { batchItems, keyTextsOf, referencedKeysOf, writeOf } from './checked-batch.js';
import { checkPlainBatch } from './plain/plain-batch.js';
import { type ValidatedBatch, validateCellRows, validateInSlices, validateItems } from './validate-items.js';

export type { CheckedBatch } from './checked.js';
export { sentKeyText } from './checked-batch.js';
export { keyOf } from './prepared-write.js';

/*
 * The check of a block of items, the first face of a write (src/batch/write-block.ts is the other),
 * one wherever it runs (on the event loop for a small body, in a worker thread for a large one, over
 * a bulk job's file): the array rules, each item's fields, repeated keys, the reference rule where
 * the block asks for it, and what the write needs (its statement's parameters).
 */

/**
 * A batch body checked: the array rules (BatchArrayRefused), then its items (checkItems). `inSlices`:
 * validation gives the event loop a turn between slices; a worker thread checks in one piece.
 */
export async function checkBatch(
  resource: BatchResource,
  body: unknown,
  statementRows: number,
  options: BatchOptions,
  inSlices = true,
): Promise<CheckedBatch> {
  // A plain body is checked on its bytes (src/batch/plain/plain-batch.ts); any other, as items.
  if (body instanceof Uint8Array && !options.outcomes && !options.skipInvalid) {
    const plain = checkPlainBatch(resource, body, statementRows);
    if (plain) return plain;
  }
  return checkItems(resource, batchItems(body), statementRows, options, inSlices);
}

/**
 * The batch's items checked: their problems, their invalid items, the keys as sent (outcomes=true,
 * for a batch that writes) and what its write needs. For items already known to be a batch array
 * (the command line's and the demo's).
 */
export async function checkItems(
  resource: BatchResource,
  items: readonly unknown[],
  statementRows: number,
  options: Pick<BatchOptions, 'outcomes' | 'skipInvalid'>,
  inSlices = true,
): Promise<CheckedBatch> {
  let batch: ValidatedBatch;
  try {
    // In slices, so a large batch does not hold the event loop (other tenants' requests) for its whole check.
    batch = inSlices
      ? await validateInSlices(resource, items, options.skipInvalid)
      : validateItems(resource, items, options.skipInvalid);
  } catch (error) {
    throw new ValidationCrash(error);
  }
  const writes = !batch.invalid ? batch.errors.length === 0 : batch.invalid.includes(0);
  // What the answer reads of the items first, then what the write needs.
  const keyTexts = options.outcomes && writes ? keyTextsOf(resource, items, batch) : undefined;
  const referencedKeys = referencedKeysOf(resource, batch.rows);
  return {
    items: items.length,
    errors: batch.errors,
    invalid: batch.invalid,
    keyTexts,
    write: writeOf(resource, batch, statementRows),
    referencedKeys,
  };
}

/** The cells of a row whose problem stands for its fields' (each field absent, its problems not kept). */
const NO_CELLS: readonly string[] = [];

/**
 * A row of a bulk job's file as the check reads it (src/jobs/file-rows.ts, FileRow): an item, or a CSV
 * row's cells with, per field, its column.
 */
export interface RowToCheck {
  item: unknown;
  problem?: string | undefined;
  cells?: readonly string[];
  columns?: { readonly ofField: readonly number[] };
}

/** A block of rows checked: per row its problems, or its normalised values. */
export interface CheckedRows {
  errors: (FieldError[] | undefined)[];
  values: (FieldValue[] | undefined)[];
  /**
   * Per row, the key its reference field names where that field passed (the row may fail by others):
   * what the reference rule asks for (resource.reference; empty without one).
   */
  references: (string | undefined)[];
}

/**
 * The rows checked by the field rules, without the reference rule (no query: what a worker thread
 * does, src/jobs/chunk-check.ts).
 */
export async function checkRowFields(
  resource: BatchResource,
  block: readonly RowToCheck[],
): Promise<CheckedRows> {
  // The rows of a CSV file whose header names only fields are checked on their cells.
  const columns = block.find((row) => row.columns)?.columns;
  const validate = (slice: readonly RowToCheck[]) =>
    columns
      ? validateCellRows(
          resource,
          slice.map((row) => (row.problem === undefined ? row.cells! : NO_CELLS)),
          columns.ofField,
          true,
        )
      : validateItems(
          resource,
          slice.map((row) => (row.problem === undefined ? row.item : {})),
          true,
        );
  const checked = await validateInSlices(resource, block, true, validate);
  const byIndex = new Map(checked.errors.map((error) => [error.index, error.errors]));
  const errors: CheckedRows['errors'] = new Array(block.length);
  const values: CheckedRows['values'] = new Array(block.length);
  const at = resource.reference?.position;
  const references: CheckedRows['references'] = at === undefined ? [] : new Array(block.length);
  for (let index = 0; index < block.length; index++) {
    const problem = block[index]!.problem;
    if (problem !== undefined) {
      errors[index] = [{ field: null, message: problem }];
      continue;
    }
    const row = checked.rows[index];
    if (at !== undefined) references[index] = row?.[at] as string | undefined;
    if (checked.invalid![index]) errors[index] = byIndex.get(index) ?? [];
    else values[index] = row;
  }
  return { errors, values, references };
}
