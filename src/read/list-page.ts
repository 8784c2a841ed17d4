import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/database.js';
import { type CountedTotal, FilteredTotals } from './filtered-totals.js';
import { linkBase } from './link-base.js';
import { pageEnvelope } from './page-envelope.js';
import type { ReadRouteDeps } from './read-routes.js';
import type { Params } from './select-list.js';

/** One list endpoint's table, as the page statement needs it. */
export interface ListSource {
  /** The row_counts name of the list (migrations 005, 007): its unfiltered total and its version. */
  counter: string;
  table: string;
  alias: string;
  /** Column unique within a tenant, used to join the paged keys back. */
  key: string;
  /** The SELECT list of one output object. */
  select: string;
}

export interface ListRequest {
  /** Placeholder of the tenant id, and the tenant id itself (the cache key). */
  tenant: string;
  tenantId: number;
  params: Params;
  /** The list's rows of the tenant (always), and the filters given. */
  where: string;
  /** The filters given, by name: none means the unfiltered list, whose total is kept by triggers. */
  filtersGiven: Readonly<Record<string, string | number>>;
  orderBy: string;
  page: number;
  limit: number;
  /** The filters and sort as given, for the links. */
  linkFilters: Record<string, string | number | undefined>;
}

/** Sends a page statement of a list and answers {data, meta, links}. */
export async function sendList(
  deps: Pick<ReadRouteDeps, 'totals' | 'publicBaseUrl'> & { db: Queryable },
  request: FastifyRequest,
  reply: FastifyReply,
  source: ListSource,
  list: ListRequest,
) {
  const { db, totals } = deps;
  const { params } = list;
  const filtered = Object.keys(list.filtersGiven).length > 0;
  const totalKey = filtered ? FilteredTotals.key(list.tenantId, source.counter, list.filtersGiven) : '';
  const known = filtered ? totals.get(totalKey) : undefined;
  const sql = pageSql({
    ...source,
    tenant: list.tenant,
    where: list.where,
    orderBy: list.orderBy,
    limit: params.add(list.limit),
    offset: list.page === 1 ? undefined : params.add((list.page - 1) * list.limit),
    filtered,
    known: known && { version: params.add(known.version), total: params.add(known.total) },
  });
  const [row] = await db.query<PageRow>(sql, params.values);
  if (filtered) totals.set(totalKey, { version: row!.version!, total: row!.total });
  // The route's own path, not the request's URL: the links name the endpoint, not what was typed.
  const baseUrl = `${linkBase(request, deps.publicBaseUrl)}${request.routeOptions.url}`;
  return sendPage(reply, baseUrl, row!, list.page, list.limit, list.linkFilters);
}

/** What a page statement answers: one row. */
export interface PageRow {
  total: number;
  /** The list's row_counts version the total was counted at; null for an unfiltered list. */
  version: CountedTotal['version'] | null;
  item_count: number;
  /** The page's objects as one JSON array text. */
  data: string;
}

/**
 * The page's JSON is built by PostgreSQL and sent as is: numbers keep every digit, and Node does not
 * parse and re-serialise a thousand objects.
 */
function sendPage(
  reply: FastifyReply,
  baseUrl: string,
  row: PageRow,
  page: number,
  limit: number,
  linkFilters: Record<string, string | number | undefined>,
) {
  const { meta, links } = pageEnvelope(baseUrl, linkFilters, page, limit, row.total, row.item_count);
  return (
    reply
      .type('application/json; charset=utf-8')
      // One Buffer: Fastify would otherwise measure the byte length of a megabyte string.
      .send(
        Buffer.from(`{"data":${row.data},"meta":${JSON.stringify(meta)},"links":${JSON.stringify(links)}}`),
      )
  );
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
export function pageSql(options: {
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
  known?: { version: string; total: string } | undefined;
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
