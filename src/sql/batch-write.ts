import { arrayLiteral } from '../db/array-literal.js';
import type { Queryable } from '../db/database.js';
import { sqlState } from '../db/failures.js';
import { ident, literal } from '../db/sql.js';
import { NOW_UTC } from '../fields/date-time.js';
import type { FieldValue, ItemsField, SqlType } from '../fields/field.js';
import { batchCounts, sqlExpressions } from '../resources/batch-counts.js';
import type { BatchResource, UpdateRule } from '../resources/batch-resource.js';
import { recordingCte, recordingParams, type WriteActivity } from './activity.js';
import { FEED_MOVE } from './changes.js';
import { countingCtes } from './written-counts.js';

/** Key columns sort byte-wise ("C"), the same in every transaction and independent of locale. */
function orderBy(alias: string, columns: readonly { name: string; sqlType: SqlType }[]): string {
  return columns
    .map(({ name, sqlType }) => `${alias}.${ident(name)}${sqlType === 'text' ? ' COLLATE "C"' : ''}`)
    .join(', ');
}

/** The SQL of an UpdateRule for the column: t is the row as it is, EXCLUDED the item's. */
function updateExpression(name: string, rule: UpdateRule): string {
  switch (rule) {
    case 'now':
      return NOW_UTC;
    case 'kept':
      return `t.${ident(name)}`;
    case 'given-or-now':
      return `COALESCE(EXCLUDED.${ident(name)}, ${NOW_UTC})`;
  }
}

/** Variants of the write statement (extensions.md 9); without any, the statement every batch used before. */
export interface WriteSqlOptions {
  /**
   * Also answer which rows were inserted: `inserted`, the 1-based positions (in the statement's
   * arrays) of the new rows, found by joining the written keys back to the key arrays.
   */
  outcomes?: boolean;
  /**
   * Leave out the rows whose reference is one of the keys of the statement's last parameter (a text
   * array): on_invalid=skip reports them as rejected, because a query before the write found those keys
   * missing. The statement then writes exactly the rows that were not rejected, even if one of those
   * keys was added since. Every form fails with SFA01 when a row it wrote names a missing key
   * (isMissingReferences).
   */
  leaveOutReferences?: boolean;
  /**
   * Also record the request in the activity (a batch without an Idempotency-Key): the row is inserted
   * by this statement (recordingCte), after its other parameters, with the items and distinct rows
   * written (parameters too) and the rows it created. See RecordedBy.
   */
  recordsActivity?: boolean;
}

/**
 * The one statement that writes a whole batch: one array parameter per column ($1 is the tenant),
 * unnested into rows, inserted in key order (so concurrent batches lock rows in the same order and
 * cannot deadlock), conflicts ignored or updated by the key. Items of new parents are inserted by the
 * same statement. It returns one row with the number of rows inserted; for upserts, rows whose values
 * did not change are left alone. It counts the rows it wrote for GET /v1/overview itself
 * (countingCtes): no trigger counts inserts or changes (migration 022).
 *
 * References are checked by the statement, as a set, in its own snapshot: its last step counts the
 * rows it wrote whose reference names no row of the referred table and passes the count to
 * refuse_missing_references (migration 011), which raises SFA01 when it is not 0, so the statement
 * fails whole and the caller names the missing keys for the 400. When the reference is part of the key
 * (stocks, factors, prices), only inserted rows need the check: a row that conflicted names a row that
 * existed when its key was first written, and referred rows are never deleted (no endpoint or command
 * deletes master data). Otherwise an upsert may change a row's reference, and every row written is
 * checked. A foreign key did this before, at one trigger and one FOR KEY SHARE lock of the referred row
 * per inserted row: 40 of the 113 ms of 10,000 stocks
 * (docs/decisions/0022-references-checked-by-the-write.md).
 */
export function buildWriteSql(resource: BatchResource, options: WriteSqlOptions = {}): string {
  const columns = writtenColumns(resource);
  const arrays = columns.map((c, at) => `$${at + 2}::${c.sqlType}[]`).join(', ');
  const reference = resource.reference;
  const childCount = resource.children ? childColumns(resource).length + 1 : 0;
  const leaveOut =
    reference && options.leaveOutReferences
      ? `\n  WHERE NOT EXISTS (SELECT 1 FROM unnest($${columns.length + 2 + childCount}::text[]) AS l(key) WHERE l.key = i.${ident(reference.name)})`
      : '';
  let childrenFrom: string | undefined;
  if (resource.children) {
    const childrenColumns = [
      { name: resource.children.parentColumn, sqlType: 'text' },
      ...childColumns(resource),
    ];
    const childArrays = childrenColumns.map((c, at) => `$${columns.length + 2 + at}::${c.sqlType}[]`);
    childrenFrom = `unnest(${childArrays.join(', ')}) AS c(${childrenColumns.map((c) => ident(c.name)).join(', ')})\n  WHERE`;
  }
  const { ctes, keyNames } = writeCtes(resource, {
    rows: `unnest(${arrays}) AS i(${columns.map((c) => ident(c.name)).join(', ')})${leaveOut}`,
    children: childrenFrom,
    returnsKeys: options.outcomes === true,
  });
  const keyColumns = columns.filter((c) => resource.key.includes(c.name));

  let insertedPositions = '';
  if (options.outcomes) {
    // The key arrays again, numbered: a written key's number is its row's place in the arrays.
    const keyArrays = keyColumns.map((c) => `$${columns.indexOf(c) + 2}::${c.sqlType}[]`).join(', ');
    insertedPositions = `,
  (SELECT array_agg(a.n::int) FROM written w JOIN unnest(${keyArrays}) WITH ORDINALITY AS a(${keyNames.join(', ')}, n) ON ${keysJoined(keyColumns, 'w', 'a')} WHERE w.inserted) AS inserted`;
  }

  // The written rows' references, checked by the final SELECT (a reference left empty names nothing).
  let missingCheck = '';
  if (reference) {
    const checkedRows = resource.key.includes(reference.name) ? 'w.inserted AND ' : '';
    const refers = `EXISTS (SELECT 1 FROM ${ident(reference.table)} r WHERE r.tenant_id = $1 AND r.${ident(reference.column)} = w.reference)`;
    missingCheck = `,
  refuse_missing_references(count(*) FILTER (WHERE ${checkedRows}w.reference IS NOT NULL AND NOT ${refers})) AS missing`;
  }
  let recorded = '';
  if (options.recordsActivity) {
    // After the statement's other parameters: the items, the distinct rows, then the row's.
    const next = columns.length + 2 + childCount + (leaveOut ? 1 : 0);
    // Both named in the FROM: a parameter the rule leaves out would have no type.
    // The rows created as the statement counted them for the overview (countingCtes).
    const counts = `(SELECT created::int AS created, $${next}::int AS items,
    $${next + 1}::int AS distinct_rows FROM counted) c`;
    const counted = batchCounts(
      resource.onExisting,
      'c.created',
      'c.items',
      'c.distinct_rows',
      sqlExpressions,
    );
    recorded = `,\n${recordingCte(next + 2, { items: 'c.items', ...counted }, counts)}`;
  }
  return `WITH ${ctes}${recorded}
SELECT count(*) FILTER (WHERE w.inserted)::int AS created${insertedPositions}${missingCheck} FROM written w`;
}

/** The columns of the resource's table a write gives, in field-table order (an items field has none). */
export function writtenColumns(resource: BatchResource): { name: string; sqlType: SqlType }[] {
  return resource.columnPositions.map((at) => ({
    name: resource.fieldNames[at]!,
    sqlType: resource.fieldList[at]!.sqlType,
  }));
}

/** Key columns compared byte-wise ("C"): a join sorts or hashes both sides, and a locale's rules cost more. */
function keysJoined(
  keyColumns: readonly { name: string; sqlType: SqlType }[],
  left: string,
  right: string,
): string {
  return keyColumns
    .map((c, at) => {
      const collate = c.sqlType === 'text' ? ' COLLATE "C"' : '';
      return `${left}.k${at}${collate} = ${right}.k${at}${collate}`;
    })
    .join(' AND ');
}

/** Where a write's rows come from (writeCtes). */
export interface WriteSource {
  /** The FROM of the rows, as `... AS i` with one column per written column (and maybe a WHERE). */
  rows: string;
  /** For a resource with children: the FROM of their rows as `... AS c`, ending so that a condition follows. */
  children?: string | undefined;
  /** `written` also returns the key columns (k0, k1, ...), to tell which rows were inserted. */
  returnsKeys: boolean;
  /** `children` returns a row per child inserted, for the count of rows the write changed. */
  countsChildren?: boolean;
}

/**
 * The CTEs that write rows, whatever they come from (a batch's arrays, a bulk job's staged rows):
 * `written` (the rows inserted in key order, so concurrent writes lock rows in the same order and
 * cannot deadlock, conflicts ignored or updated by the key), `children` (the items of the new
 * parents), and the overview's counting (countingCtes). `written` returns per row written its parent
 * key, its reference, `inserted` and, with returnsKeys, the keys as k0, k1, ... For upserts, rows
 * whose values did not change are left alone (and not returned).
 */
export function writeCtes(
  resource: BatchResource,
  source: WriteSource,
): { ctes: string; keyNames: string[] } {
  const { table, key } = resource;
  const columns = writtenColumns(resource);
  const names = columns.map((c) => c.name);
  const setOnInsert: Record<string, string> = names.includes('created_at') ? {} : { created_at: NOW_UTC };
  for (const [name, value] of Object.entries(resource.setOnInsert ?? {})) setOnInsert[name] = literal(value);
  const insertDefaults = resource.insertDefaults ?? {};
  const insertColumns = ['tenant_id', ...names, ...Object.keys(setOnInsert)].map(ident).join(', ');
  const values = [
    '$1',
    ...names.map((name) =>
      insertDefaults[name] ? `COALESCE(i.${ident(name)}, ${NOW_UTC})` : `i.${ident(name)}`,
    ),
    ...Object.values(setOnInsert),
  ].join(', ');
  const keyColumns = columns.filter((c) => key.includes(c.name));
  const keyNames = keyColumns.map((_, at) => `k${at}`);
  const conflictTarget = ['tenant_id', ...key].map(ident).join(', ');

  let onConflict = 'DO NOTHING';
  if (resource.onExisting === 'update') {
    const rules: Record<string, UpdateRule> = { updated_at: 'now', ...resource.setOnUpdate };
    const setOnUpdate = Object.fromEntries(
      Object.entries(rules).map(([name, rule]) => [name, updateExpression(name, rule)]),
    );
    // A value the item gives for a column the system sets otherwise is a change of its own.
    const changedWhenGiven = Object.keys(rules).filter((name) => rules[name] === 'given-or-now');
    // Columns the system sets are not compared: a record whose given values did not change is left alone.
    const changing = names.filter((name) => !key.includes(name) && !(name in setOnUpdate));
    const assignments = [
      ...changing.map((name) => `${ident(name)} = EXCLUDED.${ident(name)}`),
      ...Object.entries(setOnUpdate).map(([name, expression]) => `${ident(name)} = ${expression}`),
      // The row moves to this transaction's place in the change feed (migrations 008, 013); a new
      // row gets it from the columns' defaults.
      FEED_MOVE,
    ];
    const mine = changing.map((name) => `t.${ident(name)}`).join(', ');
    const theirs = changing.map((name) => `EXCLUDED.${ident(name)}`).join(', ');
    const changed = [
      `(${mine}) IS DISTINCT FROM (${theirs})`,
      ...changedWhenGiven.map(
        (name) =>
          `(EXCLUDED.${ident(name)} IS NOT NULL AND t.${ident(name)} IS DISTINCT FROM EXCLUDED.${ident(name)})`,
      ),
    ];
    onConflict = `DO UPDATE SET ${assignments.join(', ')} WHERE ${changed.join(' OR ')}`;
  }

  const parentKey = ident(key[0]!);
  const reference = resource.reference;
  const returnedReference = reference ? `, t.${ident(reference.name)} AS reference` : '';
  const returnedKeys = source.returnsKeys
    ? keyColumns.map((c, at) => `, t.${ident(c.name)} AS k${at}`).join('')
    : '';
  const written = `INSERT INTO ${ident(table)} AS t (${insertColumns})
  SELECT ${values}
  FROM ${source.rows}
  ORDER BY ${orderBy('i', keyColumns)}
  ON CONFLICT (${conflictTarget}) ${onConflict}
  RETURNING ${parentKey} AS parent_key${returnedKeys}${returnedReference}, (xmax = 0) AS inserted`;

  const children =
    resource.children && source.children
      ? `,
children AS (
  ${buildChildrenInsert(resource, source.children)} c.${ident(resource.children.parentColumn)} IN (SELECT parent_key FROM written WHERE inserted)
  ORDER BY ${orderBy('c', [
    { name: resource.children.parentColumn, sqlType: 'text' },
    ...childColumns(resource).filter((c) => c.name === childField(resource).key),
  ])}${source.countsChildren ? '\n  RETURNING 1' : ''}
)`
      : '';
  return {
    ctes: `written AS (
  ${written}
)${children},
${countingCtes(resource.name, '$1')}`,
    keyNames,
  };
}

function childField(resource: BatchResource): ItemsField {
  return resource.fieldList[resource.childPosition!] as ItemsField;
}

/** The child table's columns after the parent column, in child field-table order. */
export function childColumns(resource: BatchResource): { name: string; sqlType: SqlType }[] {
  return Object.entries(childField(resource).fields).map(([name, field]) => ({
    name,
    sqlType: field.sqlType,
  }));
}

/** Rows to one array per column (the given positions): the shape unnest takes. */
function toColumns(positions: readonly number[], rows: readonly FieldValue[][]): FieldValue[][] {
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

/**
 * The statement's parameters for some distinct rows as arrays, in the order its text numbers them ($2
 * on, after the tenant): one array per column, the children's columns last. What a client writing raw
 * SQL sends (the benchmarks' floor); the service sends their literals (columnLiterals), and the
 * benchmarks check on the tables that both wrote the same rows.
 */
export function statementColumns(resource: BatchResource, rows: readonly FieldValue[][]): FieldValue[][] {
  const columns = toColumns(resource.columnPositions, rows);
  if (resource.childPosition !== undefined) columns.push(...childParams(resource, rows));
  return columns;
}

/** The parameters of the statements that write some distinct rows: built with the statement's text, here. */
export interface WriteParams {
  /** Rows per statement: distinct row d is in chunks[floor(d / chunkRows)]. */
  chunkRows: number;
  /**
   * Per statement of at most statementRows distinct rows (one on PostgreSQL, several on PGlite): the
   * array literal of each column, the parameters after the tenant.
   */
  chunks: string[][];
  /** The items of the distinct rows' children (0 without children): the upkeep's count. */
  childItems: number;
}

/**
 * A column's literal for the write statement. A column no row gives a value for (an optional field
 * every item left out) is sent as the empty array: the statement unnests its arrays together, and
 * unnest of several arrays pads the shorter ones with NULLs (PostgreSQL, "Array Functions"), so each
 * row reads NULL there as before, without a NULL per row to build, send and parse. Every statement
 * unnests a required key column with them, so no unnest is ever of empty arrays only.
 */
function columnLiteral(values: readonly FieldValue[]): string {
  for (let at = 0; at < values.length; at++) if (values[at] !== null) return arrayLiteral(values);
  return '{}';
}

/**
 * The literals of statementColumns, without its arrays: one array is refilled with each parent
 * column's values in turn (11 arrays of 1,000 values were 8 % of a 1,000-price batch's allocations).
 */
function columnLiterals(resource: BatchResource, rows: readonly FieldValue[][]): string[] {
  const literals: string[] = [];
  const column: FieldValue[] = new Array(rows.length);
  for (const position of resource.columnPositions) {
    for (let r = 0; r < rows.length; r++) column[r] = rows[r]![position]!;
    literals.push(columnLiteral(column));
  }
  if (resource.childPosition !== undefined) {
    for (const values of childParams(resource, rows)) literals.push(columnLiteral(values));
  }
  return literals;
}

/** Each statement's column literals for the distinct rows (the slow part of a write). */
export function writeParams(
  resource: BatchResource,
  distinct: readonly FieldValue[][],
  statementRows: number,
): WriteParams {
  let childItems = 0;
  if (resource.childPosition !== undefined) {
    for (const row of distinct) childItems += (row[resource.childPosition] as FieldValue[][]).length;
  }
  const chunks: string[][] = [];
  const chunkRows = Math.min(statementRows, Math.max(distinct.length, 1));
  // At least one statement, as before (an empty batch from the command line writes nothing in it).
  for (let from = 0; from === 0 || from < distinct.length; from += chunkRows) {
    const part = distinct.length <= chunkRows ? distinct : distinct.slice(from, from + chunkRows);
    chunks.push(columnLiterals(resource, part));
  }
  return { chunks, chunkRows, childItems };
}

/** The children's INSERT from `from` (see WriteSource.children): the condition on their parents follows. */
function buildChildrenInsert(resource: BatchResource, from: string): string {
  const { table, parentColumn } = resource.children!;
  const columns = [{ name: parentColumn, sqlType: 'text' as SqlType }, ...childColumns(resource)];
  const names = columns.map((c) => ident(c.name)).join(', ');
  return `INSERT INTO ${ident(table)} (tenant_id, ${names})
  SELECT $1, ${columns.map((c) => `c.${ident(c.name)}`).join(', ')}
  FROM ${from}`;
}

/** What one write statement answers: rows created and, with outcomes, which were inserted (1-based). */
export interface ChunkWritten {
  created: number;
  inserted: number[] | null;
}

/** SQLSTATE of refuse_missing_references (migration 011). */
const MISSING_REFERENCES = 'SFA01';

/** The write statement failed because a row it wrote names a missing reference: it wrote nothing. */
export function isMissingReferences(error: unknown): boolean {
  return sqlState(error) === MISSING_REFERENCES;
}

const statements = new Map<string, string>();

/** The write statement of buildWriteSql for these options, built once per resource and variant. */
export function writeStatement(resource: BatchResource, options: WriteSqlOptions): string {
  const flag = (on: boolean | undefined) => (on ? 1 : 0);
  const name = `${resource.name}:${flag(options.outcomes)}${flag(options.leaveOutReferences)}${flag(options.recordsActivity)}`;
  let sql = statements.get(name);
  if (!sql) {
    sql = buildWriteSql(resource, options);
    statements.set(name, sql);
  }
  return sql;
}

/** What a statement of recordsActivity records: the request's row, and what its counts are made of. */
export interface RecordedBy {
  activity: WriteActivity;
  /** The items the statement writes (those left out excluded) and their distinct rows. */
  items: number;
  distinct: number;
}

/**
 * Runs a write statement of buildWriteSql on one chunk's column literals (and, for leaveOutReferences,
 * the keys to leave out; for recordsActivity, the request it records).
 */
export async function runBatchWrite(
  q: Queryable,
  sql: string,
  tenantId: number,
  columns: readonly string[],
  leftOutKeys?: readonly string[],
  recorded?: RecordedBy,
): Promise<ChunkWritten> {
  const params: unknown[] = [tenantId, ...columns];
  if (leftOutKeys) params.push(leftOutKeys);
  if (recorded) params.push(recorded.items, recorded.distinct, ...recordingParams(recorded.activity));
  const [row] = await q.query<{ created: number; inserted?: number[] | null }>(sql, params);
  return { created: row?.created ?? 0, inserted: row?.inserted ?? null };
}
