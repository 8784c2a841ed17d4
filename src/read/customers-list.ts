import type { FastifyInstance } from 'fastify';
import { customers } from '../resources/customers.js';
import { pageSql, sendPage } from './list-page.js';
import { type ParamRule, parseQuery } from './query-params.js';
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

const COLUMNS = selectList(customers.fields, 'c');

/** GET /v1/customers: filtered, sorted by creation date with the code as unique tie-break, paged. */
export function registerCustomerList(app: FastifyInstance, deps: ReadRouteDeps): void {
  app.get('/v1/customers', { onRequest: deps.authenticate }, async (request, reply) => {
    const q = parseQuery(customerListParams, request.query);
    const params = new Params();
    const tenant = params.add(request.tenantId);
    const where = [`c.tenant_id = ${tenant}`];
    if (q.client_id !== undefined) where.push(`c.code = ${params.add(q.client_id)}`);
    if (q.created_from !== undefined) where.push(`c.created_at >= ${params.add(q.created_from)}::timestamp`);
    if (q.modified_from !== undefined)
      where.push(`c.updated_at >= ${params.add(q.modified_from)}::timestamp`);
    const unfiltered =
      q.client_id === undefined && q.created_from === undefined && q.modified_from === undefined;
    const direction = q.sort === 'created_at' ? 'ASC' : 'DESC';
    const page = q.page as number;
    const limit = q.limit as number;
    const sql = pageSql({
      table: 'customers',
      alias: 'c',
      key: 'code',
      tenant,
      where: where.join(' AND '),
      select: COLUMNS,
      orderBy: `c.created_at ${direction}, c.code ${direction}`,
      limit: params.add(limit),
      offset: page === 1 ? undefined : params.add((page - 1) * limit),
      counter: unfiltered ? 'customers' : undefined,
    });
    const { page: _p, limit: _l, ...filters } = q;
    return sendPage(deps.db, request, reply, { sql, params, page, limit, filters });
  });
}
