import type { FastifyInstance } from 'fastify';
import type { ItemsField } from '../fields/field.js';
import { deliveries } from '../resources/deliveries.js';
import { type ListSource, sendList } from './list-page.js';
import { given, type ParamRule, parseQuery } from './query-params.js';
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

/** Pending deliveries as the page statement reads them. */
const SOURCE: ListSource = {
  counter: 'deliveries_pending',
  table: 'deliveries',
  alias: 'd',
  key: 'code',
  select: COLUMNS,
};

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
    const { client_id, seller_id, reported_from } = q;
    if (client_id !== undefined) where.push(`d.client_id = ${params.add(client_id)}`);
    if (seller_id !== undefined) where.push(`d.seller_id = ${params.add(seller_id)}`);
    if (reported_from !== undefined) where.push(`d.reported_at >= ${params.add(reported_from)}::timestamp`);
    const { page, limit, ...linkFilters } = q;
    return sendList(deps, request, reply, SOURCE, {
      tenant,
      tenantId: request.tenantId,
      params,
      where: where.join(' AND '),
      filtersGiven: given({ client_id, seller_id, reported_from }),
      orderBy:
        q.sort === 'reported_at'
          ? 'd.reported_at ASC NULLS FIRST, d.code ASC'
          : 'd.reported_at DESC NULLS LAST, d.code DESC',
      page: page as number,
      limit: limit as number,
      linkFilters,
    });
  });
}
