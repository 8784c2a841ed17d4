import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Field, type FieldValue, ItemsField } from '../fields/field.js';
import { fieldMessages } from '../fields/messages.js';
import type { BatchResource } from '../resources/batch-resource.js';

/** What validation reads of a resource: its field table (a batch's, or another array endpoint's items). */
export type ItemTable = Pick<BatchResource, 'fields'>;

import {
  echoedName,
  type FieldError,
  type ItemError,
  itemCut,
  MAX_ERRORS_PER_ANSWER,
  MAX_ERRORS_PER_ITEM,
} from './batch-errors.js';

export interface ValidatedBatch {
  /**
   * One row of normalised values per item, in field-table order: complete when the batch has no
   * errors; an invalid field is undefined, an item that is not an object has no row.
   */
  rows: (FieldValue[] | undefined)[];
  /** Sorted by index. */
  errors: ItemError[];
  /**
   * With everyItem (on_invalid=skip): 1 for each invalid item, every item looked at, while errors
   * stops growing past the answer's cap.
   */
  invalid?: Uint8Array;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

/** A field table prepared for checking many objects. */
interface ObjectShape {
  names: readonly string[];
  fields: readonly Field[];
  known: ReadonlySet<string>;
  /** Per field: an array of child objects (checked by checkChildren). */
  isItems: readonly boolean[];
  /**
   * Per field: Object.prototype has a member of that name ("constructor"), so only an own property
   * may be read; every other name reads faster without the Object.hasOwn check.
   */
  shadowsPrototype: readonly boolean[];
}

const shapes = new WeakMap<object, ObjectShape>();

function shapeOf(table: Readonly<Record<string, Field>>): ObjectShape {
  let shape = shapes.get(table);
  if (!shape) {
    const names = Object.keys(table);
    const fields = names.map((name) => table[name]!);
    shape = {
      names,
      fields,
      known: new Set(names),
      isItems: fields.map((field) => field instanceof ItemsField),
      shadowsPrototype: names.map((name) => name in Object.prototype),
    };
    shapes.set(table, shape);
  }
  return shape;
}

/**
 * An item's list holds one problem past the cap: enough to know it must be cut, and nothing more is
 * looked for (src/batch/batch-errors.ts).
 */
const isFull = (out: readonly FieldError[]) => out.length > MAX_ERRORS_PER_ITEM;

/**
 * The problems of the field being checked, empty again before the next field is looked at (a child
 * object is checked only between two uses): one array for every item, not one per item.
 */
const fieldProblems: string[] = [];

/**
 * Checks one object against a field table, appending every problem to out (field names prefixed
 * for children: "items[2].product_code") until out is full. Reads only own properties, so
 * "__proto__" or "constructor" keys are unknown fields, never prototypes. Returns the normalised
 * row; a field with a problem, or not looked at, is left undefined.
 */
function checkObject(
  shape: ObjectShape,
  item: Record<string, unknown>,
  prefix: string,
  out: FieldError[],
): FieldValue[] {
  const { names, fields, shadowsPrototype } = shape;
  const row: FieldValue[] = new Array(fields.length);
  fieldProblems.length = 0; // were a check to have thrown with one pushed
  for (let at = 0; at < fields.length; at++) {
    if (isFull(out)) return row;
    const name = names[at]!;
    checkField(
      shape,
      at,
      !shadowsPrototype[at] || Object.hasOwn(item, name) ? item[name] : undefined,
      prefix,
      out,
      row,
    );
  }
  if (isFull(out)) return row;
  // for-in rather than Object.keys: the same own names in the same order (a parsed object has no
  // inherited enumerable ones), without an array per item (9 % of a batch's allocations).
  for (const name in item) {
    if (shape.known.has(name)) continue;
    out.push({ field: prefix + echoedName(name), message: fieldMessages.unknownField });
    if (isFull(out)) break;
  }
  return row;
}

/**
 * Field `at` of the shape checked with its value (undefined: absent): its normalised value put in
 * row[at], or its problems appended to out.
 */
function checkField(
  shape: ObjectShape,
  at: number,
  value: unknown,
  prefix: string,
  out: FieldError[],
  row: FieldValue[],
): void {
  const field = shape.fields[at]!;
  if (shape.isItems[at] && value !== undefined && value !== null) {
    const children = checkChildren(field as ItemsField, value, prefix + shape.names[at], out);
    if (children) row[at] = children;
    return;
  }
  const messages = fieldProblems;
  const checked = field.check(value, messages);
  if (messages.length > 0) {
    for (const message of messages) out.push({ field: prefix + shape.names[at], message });
    messages.length = 0;
  } else {
    row[at] = checked as FieldValue;
  }
}

/**
 * A CSV row checked as the item its cells make (src/jobs/file-rows.ts), without making it: field `at`
 * reads cell `columnOf[at]` (-1: no column), an empty cell is absent. The same checks in the same
 * order as checkObject, so the same values and messages; for a header that names only fields of the
 * table (an unknown column is checked as an item's unknown field is, by checkObject).
 */
function checkCells(
  shape: ObjectShape,
  cells: readonly string[],
  columnOf: readonly number[],
  out: FieldError[],
): FieldValue[] {
  const row: FieldValue[] = new Array(shape.fields.length);
  fieldProblems.length = 0;
  for (let at = 0; at < row.length; at++) {
    if (isFull(out)) return row;
    const column = columnOf[at]!;
    const cell = column < 0 ? undefined : cells[column];
    checkField(shape, at, cell === '' ? undefined : cell, '', out, row);
  }
  return row;
}

/** An array of child objects, each checked like an item, their key unique within the parent. */
function checkChildren(
  field: ItemsField,
  value: unknown,
  path: string,
  out: FieldError[],
): FieldValue[][] | undefined {
  if (!Array.isArray(value)) {
    out.push({ field: path, message: fieldMessages.mustBeArray });
    return undefined;
  }
  if (value.length > field.maxItems) {
    out.push({ field: path, message: fieldMessages.tooManyItems(field.maxItems) });
    return undefined;
  }
  const shape = shapeOf(field.fields);
  const keyAt = shape.names.indexOf(field.key);
  const seen = new Set<FieldValue>();
  const before = out.length;
  const rows: FieldValue[][] = [];
  for (let index = 0; index < value.length && !isFull(out); index++) {
    const child = value[index];
    const childPath = `${path}[${index}]`;
    if (!isPlainObject(child)) {
      out.push({ field: childPath, message: fieldMessages.itemMustBeObject });
      continue;
    }
    const row = checkObject(shape, child, `${childPath}.`, out);
    const key = row[keyAt];
    if (key !== undefined) {
      if (seen.has(key))
        out.push({ field: `${childPath}.${field.key}`, message: fieldMessages.duplicateInItems });
      seen.add(key);
    }
    rows.push(row);
  }
  return out.length > before ? undefined : rows;
}

/**
 * Checks every item against the field table and collects the problems of every item: at most
 * MAX_ERRORS_PER_ITEM per item (then itemCut), and no item is looked at once the batch has more
 * problems than an answer lists (problems.invalidItems cuts the list there). Either way the batch is
 * refused: the problems not looked for could not change the answer. With everyItem (invalid items are
 * skipped, the valid ones written) every item is looked at and `invalid` marks each one that fails;
 * problems past the cap are still not kept.
 */
export function validateItems(
  resource: ItemTable,
  items: readonly unknown[],
  everyItem = false,
): ValidatedBatch {
  const shape = shapeOf(resource.fields);
  return validateEach(items, everyItem, (item, found) =>
    isPlainObject(item) ? checkObject(shape, item, '', found) : undefined,
  );
}

/**
 * Rows of a CSV file's cells validated as validateItems validates the items they make (checkCells):
 * `columnOf` gives, per field of the table, its column (-1: none).
 */
export function validateCellRows(
  resource: ItemTable,
  rows: readonly (readonly string[])[],
  columnOf: readonly number[],
  everyItem = false,
): ValidatedBatch {
  const shape = shapeOf(resource.fields);
  return validateEach(rows, everyItem, (cells, found) => checkCells(shape, cells, columnOf, found));
}

/**
 * What validateItems does, whatever an item is made of: `checkOne` gives an item's row, its problems
 * appended to `found`, or undefined for an item that is not an object.
 */
function validateEach<T>(
  items: readonly T[],
  everyItem: boolean,
  checkOne: (item: T, found: FieldError[]) => FieldValue[] | undefined,
): ValidatedBatch {
  const rows: (FieldValue[] | undefined)[] = new Array(items.length);
  const errors: ItemError[] = [];
  const invalid = everyItem ? new Uint8Array(items.length) : undefined;
  let problems = 0;
  // An item's problems, moved to a list of their own only when it has some.
  const found: FieldError[] = [];
  for (let index = 0; index < items.length && (everyItem || problems <= MAX_ERRORS_PER_ANSWER); index++) {
    const row = checkOne(items[index]!, found);
    if (!row) {
      if (invalid) invalid[index] = 1;
      if (problems <= MAX_ERRORS_PER_ANSWER) {
        errors.push({ index, errors: [{ field: null, message: fieldMessages.itemMustBeObject }] });
      }
      problems++;
      continue;
    }
    rows[index] = row;
    if (found.length === 0) continue;
    const itemErrors = found.splice(0);
    if (invalid) invalid[index] = 1;
    if (isFull(itemErrors)) itemErrors.splice(MAX_ERRORS_PER_ITEM, Infinity, itemCut);
    if (problems <= MAX_ERRORS_PER_ANSWER) errors.push({ index, errors: itemErrors });
    problems += itemErrors.length;
  }
  return invalid ? { rows, errors, invalid } : { rows, errors };
}

/**
 * Items validated between two turns of the event loop, for a batch and a bulk job's block alike.
 * Validating 10,000 customers takes 60-300 ms on this project's machine (more under load): in one
 * piece, every other request of every tenant waits that long; 250 take a few ms. A slice also keeps
 * every problem of its items, far below the cap of problems validation keeps (250 items of at most
 * 101 problems each): a job lists every invalid row's problems, and the answer's cut of a batch's
 * list (cutAnswer) reads the same first problems however the batch was sliced.
 */
export const VALIDATION_SLICE = 250;

/**
 * validateItems over slices of the batch, giving the event loop a turn (setImmediate: after pending
 * I/O) before each slice and after the last, so other requests are served while a large batch is
 * checked, and the check runs neither in the same turn as the body's parse before it nor as the
 * write's column literals after it (each tens of ms on their own). Items are checked one by one, so
 * the slices' results joined (indexes moved by the slice's start) are those of the whole batch.
 */
export async function validateInSlices<T = unknown>(
  resource: ItemTable,
  items: readonly T[],
  everyItem = false,
  validate: (slice: readonly T[]) => ValidatedBatch = (slice) => validateItems(resource, slice, everyItem),
): Promise<ValidatedBatch> {
  if (items.length <= VALIDATION_SLICE) return validate(items);
  const rows: ValidatedBatch['rows'] = new Array(items.length);
  const errors: ValidatedBatch['errors'] = [];
  const invalid = everyItem ? new Uint8Array(items.length) : undefined;
  for (let start = 0; start < items.length; start += VALIDATION_SLICE) {
    await nextTurn();
    const slice = validate(items.slice(start, start + VALIDATION_SLICE));
    for (let at = 0; at < slice.rows.length; at++) rows[start + at] = slice.rows[at];
    for (const error of slice.errors) errors.push({ ...error, index: error.index + start });
    if (invalid && slice.invalid) invalid.set(slice.invalid, start);
  }
  await nextTurn();
  return invalid ? { rows, errors, invalid } : { rows, errors };
}
