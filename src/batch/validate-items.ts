import type { FieldValue } from '../fields/field.js';
import { fieldMessages } from '../fields/messages.js';
import type { BatchResource } from './resource.js';

export interface FieldError {
  field: string | null;
  message: string;
}

/** One element of the 400 body: an invalid item and every problem it has. */
export interface ItemError {
  index: number;
  errors: FieldError[];
}

export interface ValidatedBatch {
  /**
   * One row of normalised values per item, in field-table order: complete when the batch has no
   * errors; an invalid field is undefined, an item that is not an object has no row.
   */
  rows: (FieldValue[] | undefined)[];
  /** Sorted by index. */
  errors: ItemError[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

/**
 * Checks every item against the field table and collects every problem of every item. Reads only
 * own properties, so "__proto__" or "constructor" keys are unknown fields, never prototypes.
 */
export function validateItems(resource: BatchResource, items: readonly unknown[]): ValidatedBatch {
  const { fieldNames, fieldList } = resource;
  const known = new Set(fieldNames);
  const rows: (FieldValue[] | undefined)[] = new Array(items.length);
  const errors: ItemError[] = [];
  const messages: string[] = [];

  for (let index = 0; index < items.length; index++) {
    const item = items[index];
    if (!isPlainObject(item)) {
      errors.push({ index, errors: [{ field: null, message: fieldMessages.itemMustBeObject }] });
      continue;
    }
    let itemErrors: FieldError[] | undefined;
    const row: FieldValue[] = new Array(fieldList.length);
    for (let at = 0; at < fieldList.length; at++) {
      const name = fieldNames[at]!;
      const value = Object.hasOwn(item, name) ? item[name] : undefined;
      const checked = fieldList[at]!.check(value, messages);
      if (messages.length > 0) {
        itemErrors ??= [];
        for (const message of messages) itemErrors.push({ field: name, message });
        messages.length = 0;
      } else {
        row[at] = checked as FieldValue;
      }
    }
    for (const name of Object.keys(item)) {
      if (!known.has(name)) {
        itemErrors ??= [];
        itemErrors.push({ field: name, message: fieldMessages.unknownField });
      }
    }
    if (itemErrors) errors.push({ index, errors: itemErrors });
    rows[index] = row;
  }
  return { rows, errors };
}

/** Adds "unknown product" to the items whose product code the product master lacks. */
export function markUnknownProducts(
  resource: BatchResource,
  batch: ValidatedBatch,
  missing: ReadonlySet<string>,
): void {
  const at = resource.productPosition;
  if (at === undefined || missing.size === 0) return;
  const name = resource.fieldNames[at]!;
  const byIndex = new Map(batch.errors.map((error) => [error.index, error]));
  batch.rows.forEach((row, index) => {
    const code = row?.[at];
    if (code === undefined || !missing.has(code as string)) return;
    const error = { field: name, message: fieldMessages.unknownProduct };
    const existing = byIndex.get(index);
    if (existing) existing.errors.push(error);
    else batch.errors.push({ index, errors: [error] });
  });
  batch.errors.sort((a, b) => a.index - b.index);
}

/** Distinct product codes of the valid rows, for the one existence query. */
export function productCodes(resource: BatchResource, batch: ValidatedBatch): string[] {
  const at = resource.productPosition;
  if (at === undefined) return [];
  const codes = new Set<string>();
  for (const row of batch.rows) {
    const code = row?.[at];
    if (code !== undefined) codes.add(code as string);
  }
  return [...codes];
}
