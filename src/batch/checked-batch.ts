import type { FieldValue } from '../fields/field.js';
import { parseJsonBytes } from '../fields/json-text.js';
import { type BatchResource, MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { type ArrayRule, BatchArrayRefused } from './batch-errors.js';
import type { CheckedBatch } from './checked.js';
import { prepareWrite } from './prepared-write.js';
import type { ValidatedBatch } from './validate-items.js';

/*
 * The parts of a batch's check (src/batch/check-block.ts puts them together): the array rules, what
 * the missing-references query and the answer read of the rows, the keys as sent, and what the
 * write needs.
 */

/**
 * The array rules every batch body obeys (backoffice-api.md 4.3, 7.1), in the spec's order; `max` is
 * MAX_BATCH_ITEMS but for array endpoints that take fewer (a rejection: 1,000).
 */
export function arrayRuleBrokenBy(body: unknown, max = MAX_BATCH_ITEMS): ArrayRule | undefined {
  if (body === undefined) return 'invalidJson';
  if (!Array.isArray(body)) return 'notAnArray';
  if (body.length === 0) return 'emptyArray';
  if (body.length > max) return 'tooManyItems';
  return undefined;
}

/** The body (its JSON bytes, or already parsed) as the batch's items; throws BatchArrayRefused. */
export function batchItems(body: unknown): unknown[] {
  let parsed = body;
  if (body instanceof Uint8Array) {
    try {
      parsed = parseJsonBytes(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    } catch {
      throw new BatchArrayRefused('invalidJson');
    }
  }
  const rule = arrayRuleBrokenBy(parsed);
  if (rule) throw new BatchArrayRefused(rule);
  return parsed as unknown[];
}

/**
 * Per item, the key its row refers to (BatchResource.reference), or undefined: all that the
 * missing-references query and the answer naming them read of the rows. A checked batch keeps these
 * instead of its rows, which would otherwise stay alive, and be copied by every young-generation
 * collection, while the write waits for the database.
 */
export function referencedKeysOf(
  resource: BatchResource,
  rows: ValidatedBatch['rows'],
): (string | undefined)[] {
  const at = resource.reference?.position;
  if (at === undefined) return [];
  return rows.map((row) => row?.[at] as string | undefined);
}

/** `"name":` of each key field: the fixed part of every item's key text. */
const keyNames = new WeakMap<BatchResource, string[]>();

function namesOf(resource: BatchResource): string[] {
  let names = keyNames.get(resource);
  if (!names) {
    names = resource.key.map((name) => `${JSON.stringify(name)}:`);
    keyNames.set(resource, names);
  }
  return names;
}

/**
 * An item's key fields as the client sent them, as JSON text (outcomes=true, a bulk job's results):
 * the values the item held, not their normalised forms ("1.50" stays "1.50"); a key field the item
 * lacks is left out. A number kept losslessly keeps its digits. Built by concatenation: 10,000 of
 * them are part of every such answer's time.
 */
export function sentKeyText(resource: BatchResource, item: Record<string, unknown>): string {
  const names = namesOf(resource);
  let text = '';
  for (let at = 0; at < names.length; at++) {
    const value = item[resource.key[at]!];
    if (value === undefined) continue;
    text +=
      (text === '' ? '{' : ',') +
      names[at]! +
      (typeof value === 'object' && value !== null && 'isLosslessNumber' in value
        ? String((value as unknown as { value: string }).value)
        : JSON.stringify(value));
  }
  return text === '' ? '{}' : `${text}}`;
}

/**
 * What a checked batch writes: every row when all items are valid; with on_invalid=skip, the valid
 * items' rows, told which items they are. Nothing when an item is invalid and none may be skipped.
 */
export function writeOf(
  resource: BatchResource,
  batch: ValidatedBatch,
  statementRows: number,
): CheckedBatch['write'] {
  const { rows, invalid } = batch;
  if (!invalid && batch.errors.length > 0) return undefined;
  // The valid items' rows and which items they are, when some are skipped (all rows otherwise).
  let written = rows as FieldValue[][];
  let indices: number[] | undefined;
  if (invalid) {
    written = [];
    indices = [];
    for (let at = 0; at < rows.length; at++) {
      if (invalid[at]) continue;
      written.push(rows[at]!);
      indices.push(at);
    }
    if (written.length === 0) return undefined;
  }
  return prepareWrite(resource, written, statementRows, indices, rows.length);
}

/** Per valid item, its key as sent (outcomes=true). */
export function keyTextsOf(
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
