import type { Queryable } from '../db/database.js';
import type { ListResource } from '../resources/list-resource.js';
import { selectList } from './select-list.js';

/**
 * The page statement of every list (src/resources/list-resource.ts): its WHERE from the rows the list
 * includes and the filters given, its ORDER BY from the sort, the total, the page and its JSON in one
 * round trip.
 */

/** What does not change between requests of one list, built once at start. */
export interface ListPageStatement {
  readonly list: ListResource;
  /** The list's table alias: its first letter (c for customers, d for deliveries). */
  readonly alias: string;
  /** The SELECT list of one output object, its items (always an array, in item order) included. */
  readonly columns: string;
}

export function listPageStatement(list: ListResource): ListPageStatement {
  const { source, items } = list;
  const a = source.table[0]!;
  let columns = selectList(source.fields, a);
  if (items && source.children) {
    const ai = `${a}i`;
    columns += `,
    COALESCE((
      SELECT json_agg(it ORDER BY it.${items.field.key})
      FROM (SELECT ${selectList(items.field.fields, ai)} FROM ${source.children.table} ${ai}
            WHERE ${ai}.tenant_id = ${a}.tenant_id AND ${ai}.${source.children.parentColumn} = ${a}.${list.key}) it
    ), '[]'::json) AS ${items.name}`;
  }
  // The system columns a list shows come last, after the items, as in the change feed.
  const shown = Object.fromEntries((list.shows ?? []).map((name) => [name, list.shown[name]!]));
  if (list.shows?.length) columns += `, ${selectList(shown, a)}`;
  return { list, alias: a, columns };
}

/** A filtered list's total counted before, and the row_counts version it was counted at (text). */
export interface KnownTotal {
  version: string;
  total: number;
}

export interface ListPageRequest {
  tenantId: number;
  /** The filters given, by query parameter; absent ones left out (none: the unfiltered list). */
  filters: Readonly<Record<string, string>>;
  /** The field sorted by (list.sort.field, or one of list.sort.others); absent: list.sort.field. */
  sortField?: string | undefined;
  descending: boolean;
  page: number;
  limit: number;
  /** Only for a filtered list: a total counted before under the same filters. */
  known?: KnownTotal | undefined;
}

/** What a page statement answers: one row. */
export interface PageRow {
  total: number;
  /** The list's row_counts version the total was counted at; null for an unfiltered list. */
  version: string | null;
  item_count: number;
  /** The page's objects as one JSON array text. */
  data: string;
}

/** One page of a list: its total, the version the total holds at, its item count and JSON text. */
export async function selectListPage(
  db: Queryable,
  statement: ListPageStatement,
  request: ListPageRequest,
): Promise<PageRow> {
  const { sql, params } = listPageSql(statement, request);
  const [row] = await db.query<PageRow>(sql, params);
  return row!;
}

/** Builds "$n" placeholders while collecting their values, so the statement holds only given filters. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The statement and parameters of one page (exported for tests and the bench's raw side). */
export function listPageSql(
  statement: ListPageStatement,
  request: ListPageRequest,
): { sql: string; params: unknown[] } {
  const { list, alias: a } = statement;
  const params = new Params();
  const tenant = params.add(request.tenantId);
  const where = [`${a}.tenant_id = ${tenant}`];
  for (const column of list.only?.unset ?? []) where.push(`${a}.${column} IS NULL`);
  for (const column of list.only?.set ?? []) where.push(`${a}.${column} IS NOT NULL`);
  for (const [name, filter] of Object.entries(list.filters)) {
    const value = request.filters[name];
    if (value === undefined) continue;
    where.push(
      filter.match === 'equals'
        ? `${a}.${filter.field} = ${params.add(value)}`
        : `${a}.${filter.field} >= ${params.add(value)}::timestamp`,
    );
  }
  const direction = request.descending ? 'DESC' : 'ASC';
  const field = request.sortField ?? list.sort.field;
  const sort =
    field === list.sort.field ? list.sort : list.sort.others?.find((other) => other.field === field);
  if (!sort) throw new Error(`list ${list.path} does not sort by ${field}`);
  // A row without the date is the oldest: first ascending, last descending.
  const nulls = sort.nullsAs === 'oldest' ? (request.descending ? ' NULLS LAST' : ' NULLS FIRST') : '';
  const filtered = Object.keys(request.filters).length > 0;
  const { known } = request;
  const sql = pageSql({
    counter: list.counter,
    table: list.source.table,
    alias: a,
    key: list.key,
    tenant,
    where: where.join(' AND '),
    select: statement.columns,
    orderBy: `${a}.${field} ${direction}${nulls}, ${a}.${list.key} ${direction}`,
    limit: params.add(request.limit),
    offset: request.page === 1 ? undefined : params.add((request.page - 1) * request.limit),
    filtered,
    known:
      filtered && known ? { version: params.add(known.version), total: params.add(known.total) } : undefined,
  });
  return { sql, params: params.values };
}

/**
 * The statement of one page: the total, the list's version, the item count and the page's JSON, in
 * one round trip and one pass over the page's rows.
 * - Unfiltered: totalItems is read from row_counts, kept exact by triggers (migration 005), instead of
 *   counting every row of the tenant.
 * - Filtered: counted, unless `known` gives the total counted at the version row_counts still has
 *   (migration 007); the count is a scalar subquery in a CASE branch, run only when the branch is
 *   taken, and the version is read in the same snapshot as the page.
 * - Past the first page, OFFSET would build every skipped row (a delivery's items included) only to
 *   drop it: the keys are paged first, through the index alone, and only the page's rows are built.
 */
function pageSql(options: {
  counter: string;
  table: string;
  alias: string;
  key: string;
  tenant: string;
  where: string;
  select: string;
  orderBy: string;
  limit: string;
  /** Absent on the first page. */
  offset: string | undefined;
  filtered: boolean;
  /** Placeholders of a total counted before and the version it was counted at. */
  known: { version: string; total: string } | undefined;
}) {
  const { table, alias: a, key, tenant, where, orderBy, counter, known } = options;
  const from = `${table} ${a}`;
  // A tenant without a row_counts row yet has 0 rows, and version -1: the row the triggers create
  // starts at version 0, so a total counted before the tenant's first rows is never taken for one
  // counted after.
  const kept = (column: 'n' | 'version') =>
    `COALESCE((SELECT ${column} FROM row_counts WHERE tenant_id = ${tenant} AND name = '${counter}'), ${
      column === 'n' ? 0 : -1
    })`;
  const count = `(SELECT count(*) FROM ${from} WHERE ${where})`;
  let total = kept('n');
  if (options.filtered) {
    total = known
      ? `CASE WHEN ${kept('version')} = ${known.version}::bigint THEN ${known.total}::bigint ELSE ${count} END`
      : count;
  }
  const page =
    options.offset === undefined
      ? `page AS (
  SELECT ${options.select}
  FROM ${from}
  WHERE ${where}
  ORDER BY ${orderBy}
  LIMIT ${options.limit}
)`
      : `keys AS (
  SELECT ${a}.${key} FROM ${from}
  WHERE ${where}
  ORDER BY ${orderBy}
  LIMIT ${options.limit} OFFSET ${options.offset}
), page AS (
  SELECT ${options.select}
  FROM keys JOIN ${from} ON ${a}.tenant_id = ${tenant} AND ${a}.${key} = keys.${key}
  ORDER BY ${orderBy}
)`;
  return `WITH ${page}
SELECT
  ${total}::int AS total,
  ${options.filtered ? `${kept('version')}::text` : 'NULL::text'} AS version,
  count(*)::int AS item_count,
  COALESCE(json_agg(page), '[]'::json)::text AS data
FROM page`;
}
