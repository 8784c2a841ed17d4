import type { FastifyInstance } from 'fastify';
import type { ItemsField } from '../fields/field.js';
import { deliveries } from '../resources/deliveries.js';
import { pageSql, sendPage } from './list-page.js';
import { type ParamRule, parseQuery } from './query-params.js';
import type { ReadRouteDeps } from './read-routes.js';
import { Params, selectList } from './select-list.js';

/** backoffice-api.md 4.2 and 8. */
export const pendingDeliveryParams: Readonly<Record<string, ParamRule>> = {
  client_id: { kind: 'text', max: 18 },
  seller_id: { kind: 'text', max: 18 },
  reported_from: { kind: 'date' },
  sort: { kind: 'choice', values: ['reported_at', '-reported_at'], default: '-reported_at' },
  page: { kind: 'integer', min: 1, default: 1 },
  limit: { kind: 'integer', min: 1, max: 500, default: 100 },
};

const itemFields = (deliveries.fields.items as ItemsField).fields;
/** Each delivery with its items, always an array, in item order. */
const COLUMNS = `${selectList(deliveries.fields, 'd')},
    COALESCE((
      SELECT json_agg(it ORDER BY it.item_number)
      FROM (SELECT ${selectList(itemFields, 'di')} FROM delivery_items di
            WHERE di.tenant_id = d.tenant_id AND di.delivery_code = d.code) it
    ), '[]'::json) AS items`;

/**
 * GET /v1/deliveries/pending: deliveries not yet acknowledged, sorted by reported date with the code
 * as unique tie-break. A delivery without a reported date sorts as the oldest: last when descending,
 * first when ascending (one index serves both directions).
 */
export function registerPendingDeliveries(app: FastifyInstance, deps: ReadRouteDeps): void {
  app.get('/v1/deliveries/pending', { onRequest: deps.authenticate }, async (request, reply) => {
    const q = parseQuery(pendingDeliveryParams, request.query);
    const params = new Params();
    const tenant = params.add(request.tenantId);
    const where = [`d.tenant_id = ${tenant}`, 'd.acknowledged_at IS NULL'];
    if (q.client_id !== undefined) where.push(`d.client_id = ${params.add(q.client_id)}`);
    if (q.seller_id !== undefined) where.push(`d.seller_id = ${params.add(q.seller_id)}`);
    if (q.reported_from !== undefined)
      where.push(`d.reported_at >= ${params.add(q.reported_from)}::timestamp`);
    const unfiltered =
      q.client_id === undefined && q.seller_id === undefined && q.reported_from === undefined;
    const orderBy =
      q.sort === 'reported_at'
        ? 'd.reported_at ASC NULLS FIRST, d.code ASC'
        : 'd.reported_at DESC NULLS LAST, d.code DESC';
    const page = q.page as number;
    const limit = q.limit as number;
    const sql = pageSql({
      table: 'deliveries',
      alias: 'd',
      key: 'code',
      tenant,
      where: where.join(' AND '),
      select: COLUMNS,
      orderBy,
      limit: params.add(limit),
      offset: page === 1 ? undefined : params.add((page - 1) * limit),
      counter: unfiltered ? 'deliveries_pending' : undefined,
    });
    const { page: _p, limit: _l, ...filters } = q;
    return sendPage(deps.db, request, reply, { sql, params, page, limit, filters });
  });
}
