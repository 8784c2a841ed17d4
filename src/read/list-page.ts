import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/database.js';
import { pageEnvelope } from './page-envelope.js';
import type { Params } from './select-list.js';

export interface PageQuery {
  /** count(*) of the filtered rows, and the page's rows as one JSON array text, in one round trip. */
  sql: string;
  params: Params;
  page: number;
  limit: number;
  /** The filters and sort as given, for the links. */
  filters: Record<string, string | number | undefined>;
}

/**
 * Runs a page query and answers {data, meta, links}. The page's JSON is built by PostgreSQL and sent
 * as is: numbers keep every digit, and Node does not parse and re-serialise a thousand objects.
 */
export async function sendPage(
  db: Queryable,
  request: FastifyRequest,
  reply: FastifyReply,
  query: PageQuery,
) {
  const [row] = await db.query<{ total: number; item_count: number; data: string }>(
    query.sql,
    query.params.values,
  );
  const baseUrl = `${request.protocol}://${request.host}${request.url.split('?')[0]}`;
  const { meta, links } = pageEnvelope(
    baseUrl,
    query.filters,
    query.page,
    query.limit,
    row!.total,
    row!.item_count,
  );
  return (
    reply
      .type('application/json; charset=utf-8')
      // One Buffer: Fastify would otherwise measure the byte length of a megabyte string.
      .send(
        Buffer.from(`{"data":${row!.data},"meta":${JSON.stringify(meta)},"links":${JSON.stringify(links)}}`),
      )
  );
}

/**
 * Wraps a filtered, ordered, limited row source into the count + page statement sendPage expects.
 * With counter (an unfiltered list), totalItems is read from row_counts, kept exact by triggers
 * (migration 005), instead of counting every row of the tenant.
 * Past the first page, OFFSET would build every skipped row (a delivery's items included) only to
 * drop it: the keys are paged first, through the index alone, and only the page's rows are built.
 */
export function pageSql(options: {
  /** The table and its alias: { table: 'customers', alias: 'c' }. */
  table: string;
  alias: string;
  /** Column unique within a tenant, used to join the paged keys back. */
  key: string;
  tenant: string;
  where: string;
  select: string;
  orderBy: string;
  limit: string;
  /** Absent on the first page. */
  offset: string | undefined;
  counter?: string;
}) {
  const { table, alias: a, key, tenant, where, orderBy } = options;
  const from = `${table} ${a}`;
  const total = options.counter
    ? `COALESCE((SELECT n FROM row_counts WHERE tenant_id = ${tenant} AND name = '${options.counter}'), 0)`
    : `(SELECT count(*) FROM ${from} WHERE ${where})`;
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
  (SELECT count(*) FROM page)::int AS item_count,
  (SELECT COALESCE(json_agg(page), '[]'::json) FROM page)::text AS data`;
}
