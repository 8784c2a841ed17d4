import { arrayLiteral } from '../db/array-literal.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { statementColumns } from '../sql/batch-write.js';

export interface BatchCounts {
  created: number;
  updated: number;
  ignored: number;
}

/** The text a row's key is compared by. */
function keyOf(keyPositions: readonly number[], row: readonly FieldValue[]): string {
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
 * a small body, in a worker thread for a large one (src/workers/batch-worker.ts), which sends back these
 * strings and counts rather than the rows (a structured clone of 10,000 rows costs the event loop
 * about what their parse did).
 */
export interface PreparedWrite {
  /** The batch's items. */
  items: number;
  /** Its rows once repeated keys are merged (deduplicate). */
  distinct: number;
  /** Rows per statement: distinct row d is in chunks[floor(d / chunkRows)]. */
  chunkRows: number;
  /** DistinctRows.rowItems and duplicateOf: which item each row and each repeat is. */
  rowItems?: Int32Array | undefined;
  duplicateOf?: Int32Array | undefined;
  /** The items of the distinct rows' children (0 without children): the upkeep's count. */
  childItems: number;
  /**
   * Per statement of at most statementRows distinct rows (one on PostgreSQL, several on PGlite): the
   * array literal of each column, the parameters after the tenant.
   */
  chunks: string[][];
}

/**
 * Deduplicates the rows and builds each statement's column literals (the slow part of a write).
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
  let childItems = 0;
  if (resource.childPosition !== undefined) {
    for (const row of distinct) childItems += (row[resource.childPosition] as FieldValue[][]).length;
  }
  const chunks: string[][] = [];
  const chunkRows = Math.min(statementRows, Math.max(distinct.length, 1));
  // At least one statement, as before (an empty batch from the command line writes nothing in it).
  for (let from = 0; from === 0 || from < distinct.length; from += chunkRows) {
    const part = distinct.length <= chunkRows ? distinct : distinct.slice(from, from + chunkRows);
    chunks.push(statementColumns(resource, part).map(arrayLiteral));
  }
  return {
    items: rows.length,
    distinct: distinct.length,
    childItems,
    chunks,
    chunkRows,
    ...(rowItems ? { rowItems } : {}),
    ...(duplicateOf ? { duplicateOf } : {}),
  };
}

/** Tells the database's upkeep how many rows the batch changed, its children's included. */
export async function noteWrites(
  wrote: (table: string, rows: number) => Promise<void>,
  resource: BatchResource,
  prepared: PreparedWrite,
  counts: BatchCounts,
): Promise<void> {
  await wrote(resource.table, counts.created + counts.updated);
  if (resource.children && resource.childPosition !== undefined && prepared.distinct > 0) {
    // Items are written with new parents only: their share of the batch's items, near enough here.
    await wrote(
      resource.children.table,
      Math.round((prepared.childItems * counts.created) / prepared.distinct),
    );
  }
}
