import type { FastifyInstance } from 'fastify';
import { customers } from '../resources/customers.js';
import { type ListSource, sendList } from './list-page.js';
import { given, type ParamRule, parseQuery } from './query-params.js';
import type { ReadRouteDeps } from './read-routes.js';
import { Params, selectList } from './select-list.js';

/** backoffice-api.md 4.1 and 8. */
export const customerListParams: Readonly<Record<string, ParamRule>> = {
  client_id: { kind: 'text', max: 18 },
  created_from: { kind: 'date' },
  modified_from: { kind: 'date' },
  sort: { kind: 'choice', values: ['created_at', '-created_at'], default: '-created_at' },
  page: { kind: 'integer', min: 1, default: 1 },
  limit: { kind: 'integer', min: 1, max: 1000, default: 100 },
};

/** The customers list as the page statement reads it. */
const SOURCE: ListSource = {
  counter: 'customers',
  table: 'customers',
  alias: 'c',
  key: 'code',
  select: selectList(customers.fields, 'c'),
};

/** GET /v1/customers: filtered, sorted by creation date with the code as unique tie-break, paged. */
export function registerCustomerList(app: FastifyInstance, deps: ReadRouteDeps): void {
  app.get('/v1/customers', { onRequest: deps.authenticate }, async (request, reply) => {
    const q = parseQuery(customerListParams, request.query);
    const params = new Params();
    const tenant = params.add(request.tenantId);
    const where = [`c.tenant_id = ${tenant}`];
    const { client_id, created_from, modified_from } = q;
    if (client_id !== undefined) where.push(`c.code = ${params.add(client_id)}`);
    if (created_from !== undefined) where.push(`c.created_at >= ${params.add(created_from)}::timestamp`);
    if (modified_from !== undefined) where.push(`c.updated_at >= ${params.add(modified_from)}::timestamp`);
    const direction = q.sort === 'created_at' ? 'ASC' : 'DESC';
    const { page, limit, ...linkFilters } = q;
    return sendList(deps, request, reply, SOURCE, {
      tenant,
      tenantId: request.tenantId,
      params,
      where: where.join(' AND '),
      filtersGiven: given({ client_id, created_from, modified_from }),
      orderBy: `c.created_at ${direction}, c.code ${direction}`,
      page: page as number,
      limit: limit as number,
      linkFilters,
    });
  });
}
