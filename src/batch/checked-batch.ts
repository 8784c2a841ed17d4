import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { ValidationCrash } from './batch-errors.js';
import type { BatchOptions } from './batch-options.js';
import { validateInSlices } from './validate-in-slices.js';
import type { ItemError, ValidatedBatch } from './validate-items.js';
import { type PreparedWrite, prepareWrite } from './write-batch.js';

/**
 * A batch checked, wherever that was (inline, or in a worker thread for a large body): its problems,
 * and what its write and its answer need. Never the parsed items: a worker sends back only this.
 */
export interface CheckedBatch {
  /** The array's length. */
  items: number;
  /** Sorted by index, capped (src/batch/error-limits.ts); empty for a valid batch. */
  errors: ItemError[];
  /** With on_invalid=skip: 1 for each invalid item (every item looked at). */
  invalid?: Uint8Array | undefined;
  /**
   * The rows as far as the missing-references query reads them (the referring key at
   * reference.position; undefined for an item without a valid row). A function: a worker's batch
   * builds them only when the query runs.
   */
  rows: () => ValidatedBatch['rows'];
  /** With outcomes=true: per valid item, its key fields as sent, as JSON text. */
  keyTexts?: (string | undefined)[] | undefined;
  /** What writing the valid items needs: absent when nothing is to be written. */
  write?: PreparedWrite | undefined;
}

/** How many items are invalid (without on_invalid=skip: nonzero exactly when one is). */
export function invalidCount(checked: CheckedBatch): number {
  if (!checked.invalid) return checked.errors.length;
  let count = 0;
  for (const flag of checked.invalid) count += flag;
  return count;
}

/** `{"name":` and `,"name":` of each key field: the fixed part of every item's key text. */
const keyPrefixes = new WeakMap<BatchResource, string[]>();

function prefixesOf(resource: BatchResource): string[] {
  let prefixes = keyPrefixes.get(resource);
  if (!prefixes) {
    prefixes = resource.key.map((name, at) => `${at === 0 ? '{' : ','}${JSON.stringify(name)}:`);
    keyPrefixes.set(resource, prefixes);
  }
  return prefixes;
}

/**
 * An item's key fields as the client sent them, as JSON text (outcomes=true): the values the item
 * held, not their normalised forms ("1.50" stays "1.50"). A number kept losslessly keeps its digits.
 * Built by concatenation: 10,000 of them are part of every such answer's time.
 */
function sentKeyText(resource: BatchResource, item: Record<string, unknown>): string {
  const prefixes = prefixesOf(resource);
  let text = '';
  for (let at = 0; at < prefixes.length; at++) {
    const value = item[resource.key[at]!];
    text +=
      prefixes[at]! +
      (typeof value === 'object' && value !== null && 'isLosslessNumber' in value
        ? String((value as unknown as { value: string }).value)
        : JSON.stringify(value));
  }
  return `${text}}`;
}

/**
 * What a checked batch writes: every row when all items are valid; with on_invalid=skip, the valid
 * items' rows, told which items they are. Nothing when an item is invalid and none may be skipped.
 */
function writeOf(
  resource: BatchResource,
  batch: ValidatedBatch,
  statementRows: number,
): CheckedBatch['write'] {
  const { rows, invalid } = batch;
  if (!invalid) {
    if (batch.errors.length > 0) return undefined;
    return prepareWrite(resource, rows as FieldValue[][], statementRows);
  }
  const valid: FieldValue[][] = [];
  const indices: number[] = [];
  for (let at = 0; at < rows.length; at++) {
    if (invalid[at]) continue;
    valid.push(rows[at]!);
    indices.push(at);
  }
  if (valid.length === 0) return undefined;
  return prepareWrite(resource, valid, statementRows, indices, rows.length);
}

/** Per valid item, its key as sent (outcomes=true). */
function keyTextsOf(
  resource: BatchResource,
  items: readonly unknown[],
  batch: ValidatedBatch,
): (string | undefined)[] {
  return items.map((item, at) =>
    batch.rows[at] === undefined || batch.invalid?.[at] || (!batch.invalid && batch.errors.length > 0)
      ? undefined
      : sentKeyText(resource, item as Record<string, unknown>),
  );
}

/**
 * What a validated batch comes to, the same wherever it was validated (on the event loop by
 * checkItems, in a worker thread by src/workers/batch-worker.ts): its problems, its invalid items,
 * the keys as sent (outcomes=true, for a batch that writes) and what its write needs.
 */
export function checkedParts(
  resource: BatchResource,
  items: readonly unknown[],
  batch: ValidatedBatch,
  statementRows: number,
  options: Pick<BatchOptions, 'outcomes'>,
): Omit<CheckedBatch, 'rows'> {
  const write = writeOf(resource, batch, statementRows);
  return {
    items: items.length,
    errors: batch.errors,
    invalid: batch.invalid,
    keyTexts: options.outcomes && write ? keyTextsOf(resource, items, batch) : undefined,
    write,
  };
}

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
  return { ...checkedParts(resource, items, batch, statementRows, options), rows: () => batch.rows };
}
