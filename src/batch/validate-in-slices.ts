import { setImmediate as nextTurn } from 'node:timers/promises';
import type { BatchResource } from '../resources/batch-resource.js';
import { type ValidatedBatch, validateItems } from './validate-items.js';

/**
 * Items validated between two turns of the event loop. Validating 10,000 customers takes 60-300 ms
 * on this project's machine (more under load): in one piece, every other request of every tenant
 * waits that long. 500 customers take a few ms.
 */
export const VALIDATION_SLICE = 500;

/**
 * validateItems over slices of the batch, giving the event loop a turn (setImmediate: after pending
 * I/O) before each slice and after the last, so other requests are served while a large batch is
 * checked, and the check runs neither in the same turn as the body's parse before it nor as the
 * write's column literals after it (each tens of ms on their own). Items are checked one by one, so
 * the slices' results joined (indexes moved by the slice's start) are those of the whole batch.
 */
export async function validateInSlices(
  resource: BatchResource,
  items: readonly unknown[],
  everyItem = false,
): Promise<ValidatedBatch> {
  if (items.length <= VALIDATION_SLICE) return validateItems(resource, items, everyItem);
  const rows: ValidatedBatch['rows'] = new Array(items.length);
  const errors: ValidatedBatch['errors'] = [];
  const invalid = everyItem ? new Uint8Array(items.length) : undefined;
  for (let start = 0; start < items.length; start += VALIDATION_SLICE) {
    await nextTurn();
    const slice = validateItems(resource, items.slice(start, start + VALIDATION_SLICE), everyItem);
    for (let at = 0; at < slice.rows.length; at++) rows[start + at] = slice.rows[at];
    for (const error of slice.errors) errors.push({ ...error, index: error.index + start });
    if (invalid && slice.invalid) invalid.set(slice.invalid, start);
  }
  await nextTurn();
  return invalid ? { rows, errors, invalid } : { rows, errors };
}
