import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Queryable } from '../../db/database.js';
import { HttpProblem } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import { checkQuery } from '../../read/query-params.js';
import { batchResources } from '../../resources/index.js';
import { activityPage } from '../../sql/activity.js';
import { overviewJson } from '../../sql/overview.js';
import {
  ACTIVITY_CURSOR,
  ACTIVITY_PATH,
  ACTIVITY_QUERY,
  activityRoutes,
  CURSOR_MESSAGE,
  OVERVIEW_PATH,
} from './activity-schemas.js';
import { linkBase } from './list-route-links.js';

export interface ActivityRouteDeps {
  db: Queryable;
  authenticate: onRequestHookHandler;
  /** PUBLIC_BASE_URL: where paging links point; absent, the request's well-formed scheme and host. */
  publicBaseUrl?: string | undefined;
}

const RESOURCE_NAMES = batchResources.map((resource) => resource.name);

const JSON_TYPE = 'application/json; charset=utf-8';

/** GET /v1/activity and GET /v1/overview (extensions.md 14): a tenant reads only its own. */
export function registerActivityRoutes(app: FastifyInstance, deps: ActivityRouteDeps): void {
  const route = (schema: object) => ({
    onRequest: deps.authenticate,
    schema,
    validatorCompiler: checkedByHandler,
  });

  app.get(ACTIVITY_PATH, route(activityRoutes.activity.schema), async (request, reply) => {
    const checked = checkQuery(ACTIVITY_QUERY, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const { limit, outcome, resource, before } = checked.values as {
      limit: number;
      outcome: string;
      resource: string;
      before: string | undefined;
    };
    if (before !== undefined && !ACTIVITY_CURSOR.test(before)) {
      throw new HttpProblem(400, [{ field: 'before', message: CURSOR_MESSAGE }]);
    }
    const page = await activityPage(deps.db, {
      tenantId: request.tenantId,
      limit,
      outcome: outcome === '' ? undefined : (outcome as 'failed' | 'succeeded'),
      resource: resource === '' ? undefined : resource,
      before: before === undefined ? undefined : BigInt(before),
    });
    let next: string | null = null;
    if (page.next !== undefined) {
      const query = new URLSearchParams({ limit: String(limit) });
      if (outcome !== '') query.set('outcome', outcome);
      if (resource !== '') query.set('resource', resource);
      query.set('before', page.next.toString());
      next = `${linkBase(request, deps.publicBaseUrl)}${ACTIVITY_PATH}?${query}`;
    }
    return reply.type(JSON_TYPE).send(`{"data":${page.data},"links":{"next":${JSON.stringify(next)}}}`);
  });

  app.get(OVERVIEW_PATH, route(activityRoutes.overview.schema), async (request, reply) => {
    const checked = checkQuery({}, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    return reply.type(JSON_TYPE).send(await overviewJson(deps.db, request.tenantId, RESOURCE_NAMES));
  });
}
