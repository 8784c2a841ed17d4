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

/**
 * What writing a validated batch needs, built from its rows wherever they were validated: inline for
 * a small body, in a worker thread for a large one (src/batch/batch-worker.ts), which sends back these
 * strings and counts rather than the rows (a structured clone of 10,000 rows costs the event loop
 * about what their parse did).
 */
export interface PreparedWrite {
  /** The batch's items. */
  items: number;
  /** Its rows once repeated keys are merged (deduplicate). */
  distinct: number;
  /** The items of the distinct rows' children (0 without children): the upkeep's count. */
  childItems: number;
  /**
   * Per statement of at most statementRows distinct rows (one on PostgreSQL, several on PGlite): the
   * array literal of each column, the parameters after the tenant.
   */
  chunks: string[][];
}

/** Deduplicates the rows and builds each statement's column literals (the slow part of a write). */
export function prepareWrite(
  resource: BatchResource,
  rows: readonly FieldValue[][],
  statementRows: number,
): PreparedWrite {
  const distinct = deduplicate(resource, rows);
  const chunks: string[][] = [];
  // At least one statement, as before (an empty batch from the command line writes nothing in it).
  for (let from = 0; from === 0 || from < distinct.length; from += statementRows) {
    const part = distinct.length <= statementRows ? distinct : distinct.slice(from, from + statementRows);
    chunks.push(statementColumns(resource, part).map(arrayLiteral));
  }
  let childItems = 0;
  if (resource.childPosition !== undefined) {
    for (const row of distinct) childItems += (row[resource.childPosition] as FieldValue[][]).length;
  }
  return { items: rows.length, distinct: distinct.length, childItems, chunks };
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
  return writePrepared(db, tenantId, resource, prepareWrite(resource, rows, db.statementRows));
}

/** Runs a prepared write's statements (several, in one transaction, on PGlite) and counts the rows. */
export async function writePrepared(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  prepared: PreparedWrite,
): Promise<BatchCounts> {
  let sql = statements.get(resource);
  if (!sql) {
    sql = buildWriteSql(resource);
    statements.set(resource, sql);
  }
  const write = async (target: Queryable, columns: readonly string[]) => {
    const [result] = await target.query<{ created: number }>(sql, [tenantId, ...columns]);
    return result?.created ?? 0;
  };
  let created: number;
  const { chunks, items, distinct } = prepared;
  if (chunks.length > 1) {
    // Several statements of the database's size (PGlite), all or nothing together.
    created = await db.transaction(async (tx) => {
      let sum = 0;
      for (const columns of chunks) sum += await write(tx, columns);
      return sum;
    });
  } else {
    created = await withRetry(() => write(db, chunks[0]!));
  }
  const counts: BatchCounts =
    resource.onExisting === 'ignore'
      ? { created, updated: 0, ignored: items - created }
      : { created, updated: distinct - created, ignored: items - distinct };
  await noteWrites(db.wrote.bind(db), resource, prepared, counts);
  return counts;
}

/** Tells the database's upkeep how many rows the batch changed, its children's included. */
async function noteWrites(
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
