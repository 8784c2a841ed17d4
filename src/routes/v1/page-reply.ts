import type { FastifyReply } from 'fastify';
import type { ListQuery } from '../../read/list-params.js';
import { pageEnvelope } from '../../read/page-envelope.js';
import type { PageRow } from '../../sql/list-page.js';

/**
 * Answers {data, meta, links}. The page's JSON is built by PostgreSQL and sent as is: numbers keep
 * every digit, and Node does not parse and re-serialise a thousand objects. baseUrl is the endpoint's
 * address the links start with.
 */
export function sendPage(reply: FastifyReply, baseUrl: string, row: PageRow, query: ListQuery) {
  const { page, limit, linkFilters } = query;
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
