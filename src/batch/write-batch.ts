import { arrayLiteral } from '../db/array-literal.js';
import { type Database, type Queryable, withRetry } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from './resource.js';
import { buildWriteSql, childColumns } from './write-sql.js';

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
  const { keyPositions } = resource;
  // Distinct first key parts make distinct keys: checked without building the joined keys. (Every
  // key part is a required field, so a valid row always has it.)
  if (keyPositions.length > 1 && distinctAt(keyPositions[0]!, rows)) return rows;
  const keys = new Array<string>(rows.length);
  const seen = new Set<string>();
  for (let r = 0; r < rows.length; r++) {
    keys[r] = keyOf(keyPositions, rows[r]!);
    seen.add(keys[r]!);
  }
  if (seen.size === rows.length) return rows;
  const byKey = new Map<string, FieldValue[]>();
  const keepLast = resource.onExisting === 'update';
  for (let r = 0; r < rows.length; r++) {
    if (keepLast || !byKey.has(keys[r]!)) byKey.set(keys[r]!, rows[r]!);
  }
  return [...byKey.values()];
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

/** Rows to one array per column (the given positions): the shape unnest takes. */
export function toColumns(positions: readonly number[], rows: readonly FieldValue[][]): FieldValue[][] {
  const columns: FieldValue[][] = positions.map(() => new Array(rows.length));
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    for (let c = 0; c < positions.length; c++) columns[c]![r] = row[positions[c]!]!;
  }
  return columns;
}

/** The items of every parent row, each prefixed with its parent's key, as child-table columns. */
function childParams(resource: BatchResource, rows: readonly FieldValue[][]): FieldValue[][] {
  const childAt = resource.childPosition!;
  const keyAt = resource.keyPositions[0]!;
  const flat: FieldValue[][] = [];
  for (const row of rows) {
    for (const child of row[childAt] as FieldValue[][]) flat.push([row[keyAt]!, ...child]);
  }
  const width = 1 + childColumns(resource).length;
  return toColumns(
    Array.from({ length: width }, (_, at) => at),
    flat,
  );
}

const statements = new WeakMap<BatchResource, string>();

/**
 * The statement's parameters for some distinct rows: the tenant, then one array per column (as array
 * literals: see arrayLiteral), the children's columns last.
 */
export function statementColumns(resource: BatchResource, rows: readonly FieldValue[][]): FieldValue[][] {
  const columns = toColumns(resource.columnPositions, rows);
  if (resource.childPosition !== undefined) columns.push(...childParams(resource, rows));
  return columns;
}

function statementParams(
  resource: BatchResource,
  tenantId: number,
  rows: readonly FieldValue[][],
): unknown[] {
  return [tenantId, ...statementColumns(resource, rows).map(arrayLiteral)];
}

/**
 * Writes a validated batch with one statement: atomic on its own (all of it or nothing), so it needs no
 * BEGIN/COMMIT round trips; retried whole on a deadlock or serialization failure.
 */
export async function writeBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  rows: readonly FieldValue[][],
): Promise<BatchCounts> {
  let sql = statements.get(resource);
  if (!sql) {
    sql = buildWriteSql(resource);
    statements.set(resource, sql);
  }
  const distinct = deduplicate(resource, rows);
  const write = async (target: Queryable, part: readonly FieldValue[][]) => {
    const [result] = await target.query<{ created: number }>(sql, statementParams(resource, tenantId, part));
    return result?.created ?? 0;
  };
  let created: number;
  const chunk = db.statementRows;
  if (distinct.length > chunk) {
    // Several statements of the database's size (PGlite), all or nothing together.
    created = await db.transaction(async (tx) => {
      let sum = 0;
      for (let from = 0; from < distinct.length; from += chunk) {
        sum += await write(tx, distinct.slice(from, from + chunk));
      }
      return sum;
    });
  } else {
    created = await withRetry(() => write(db, distinct));
  }
  const counts: BatchCounts =
    resource.onExisting === 'ignore'
      ? { created, updated: 0, ignored: rows.length - created }
      : { created, updated: distinct.length - created, ignored: rows.length - distinct.length };
  await noteWrites(db.wrote.bind(db), resource, distinct, counts);
  return counts;
}

/** Tells the database's upkeep how many rows the batch changed, its children's included. */
async function noteWrites(
  wrote: (table: string, rows: number) => Promise<void>,
  resource: BatchResource,
  distinct: readonly FieldValue[][],
  counts: BatchCounts,
): Promise<void> {
  await wrote(resource.table, counts.created + counts.updated);
  if (resource.children && resource.childPosition !== undefined && distinct.length > 0) {
    // Items are written with new parents only: their share of the batch's items, near enough here.
    let items = 0;
    for (const row of distinct) items += (row[resource.childPosition] as FieldValue[][]).length;
    await wrote(resource.children.table, Math.round((items * counts.created) / distinct.length));
  }
}
