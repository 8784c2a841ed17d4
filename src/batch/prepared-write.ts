import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { type WriteParams, writeParams } from '../sql/batch-write.js';

/*
 * What writing a checked batch needs: its distinct rows (repeated keys merged, extensions.md section 5)
 * and the write statement's parameters built from them (src/sql/batch-write.ts), wherever the batch was
 * checked.
 */

/** The text a row's key is compared by (repeated keys: here, and over a bulk job's file). */
export function keyOf(keyPositions: readonly number[], row: readonly FieldValue[]): string {
  // NUL never appears in a stored value (validation refuses it), so it separates key parts safely.
  if (keyPositions.length === 1) return String(row[keyPositions[0]!]);
  let key = String(row[keyPositions[0]!]);
  for (let at = 1; at < keyPositions.length; at++) key += `\u0000${row[keyPositions[at]!]}`;
  return key;
}

/**
 * Repeated keys inside one batch (extensions.md section 5): for insert-if-absent the first
 * occurrence wins, for upserts the last. Keys are compared on normalised values, so "1.5" and 1.50
 * are the same factor unit. A batch without repeats (the usual one) is returned as it is.
 */
export function deduplicate(resource: BatchResource, rows: readonly FieldValue[][]): readonly FieldValue[][] {
  return distinctRows(resource, rows).rows;
}

/** The rows a batch writes, and which item each one and each repeat is (per-item outcomes). */
export interface DistinctRows {
  rows: readonly FieldValue[][];
  /** Per distinct row, the index of the item it is; undefined: row i is item i. */
  rowItems?: Int32Array | undefined;
  /** Per item, the index of the occurrence applied instead of it, -1 for the applied ones; undefined: no repeats. */
  duplicateOf?: Int32Array | undefined;
}

/**
 * deduplicate, keeping track of items: `indices` are the items the rows are (only the valid ones
 * when invalid items are skipped; undefined: row i is item i), `items` the batch's length.
 */
export function distinctRows(
  resource: BatchResource,
  rows: readonly FieldValue[][],
  indices?: readonly number[],
  items = rows.length,
): DistinctRows {
  const { keyPositions } = resource;
  const rowItems = indices ? Int32Array.from(indices) : undefined;
  // Distinct first key parts make distinct keys: checked without building the joined keys. (Every
  // key part is a required field, so a valid row always has it.)
  if (keyPositions.length > 1 && distinctAt(keyPositions[0]!, rows)) return { rows, rowItems };
  const keys = new Array<string>(rows.length);
  const seen = new Set<string>();
  for (let r = 0; r < rows.length; r++) {
    keys[r] = keyOf(keyPositions, rows[r]!);
    seen.add(keys[r]!);
  }
  if (seen.size === rows.length) return { rows, rowItems };
  // Per key, the position of the occurrence applied.
  const applied = new Map<string, number>();
  const keepLast = resource.onExisting === 'update';
  for (let r = 0; r < rows.length; r++) {
    if (keepLast || !applied.has(keys[r]!)) applied.set(keys[r]!, r);
  }
  const itemOf = (r: number) => (indices ? indices[r]! : r);
  const distinct: FieldValue[][] = [];
  const distinctItems = new Int32Array(applied.size);
  for (const r of applied.values()) {
    distinctItems[distinct.length] = itemOf(r);
    distinct.push(rows[r]!);
  }
  const duplicateOf = new Int32Array(items).fill(-1);
  for (let r = 0; r < rows.length; r++) {
    const a = applied.get(keys[r]!)!;
    if (a !== r) duplicateOf[itemOf(r)] = itemOf(a);
  }
  return { rows: distinct, rowItems: distinctItems, duplicateOf };
}

/** Every row has its own value at position; stops at the first repeat. */
function distinctAt(position: number, rows: readonly FieldValue[][]): boolean {
  const seen = new Set<FieldValue>();
  for (let r = 0; r < rows.length; r++) {
    seen.add(rows[r]![position]!);
    if (seen.size === r) return false;
  }
  return true;
}

/**
 * What writing a validated batch needs, built from its rows wherever they were validated: inline for
 * a small body, in a worker thread for a large one (src/body-threads/batch-worker.ts), which sends back these
 * strings and counts rather than the rows (a structured clone of 10,000 rows costs the event loop
 * about what their parse did).
 */
export interface PreparedWrite extends WriteParams {
  /** The batch's items. */
  items: number;
  /** Its rows once repeated keys are merged (deduplicate). */
  distinct: number;
  /** DistinctRows.rowItems and duplicateOf: which item each row and each repeat is. */
  rowItems?: Int32Array | undefined;
  duplicateOf?: Int32Array | undefined;
}

/**
 * Deduplicates the rows and builds the statements' parameters (the slow part of a write).
 * `indices`: the items the rows are, when some items are left out (on_invalid=skip); `items`: the
 * batch's length then.
 */
export function prepareWrite(
  resource: BatchResource,
  rows: readonly FieldValue[][],
  statementRows: number,
  indices?: readonly number[],
  items = rows.length,
): PreparedWrite {
  const { rows: distinct, rowItems, duplicateOf } = distinctRows(resource, rows, indices, items);
  return {
    items: rows.length,
    distinct: distinct.length,
    ...(rowItems ? { rowItems } : {}),
    ...(duplicateOf ? { duplicateOf } : {}),
    ...writeParams(resource, distinct, statementRows),
  };
}
