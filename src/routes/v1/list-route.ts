import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Queryable } from '../../db/database.js';
import { HttpProblem } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import type { FilteredTotals } from '../../read/filtered-totals.js';
import { readListPage } from '../../read/list-page.js';
import { listParamRules, listQuery } from '../../read/list-params.js';
import { checkQuery } from '../../read/query-params.js';
import type { ListResource } from '../../resources/list-resource.js';
import { listPageStatement } from '../../sql/list-page.js';
import { linkBase } from './list-route-links.js';
import { listRoute } from './list-schemas.js';
import { sendPage } from './page-reply.js';

export interface ListRouteDeps {
  db: Queryable;
  /** Runs before anything else; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** Totals of filtered lists counted by this app, reused while their version holds. */
  totals: FilteredTotals;
  /** PUBLIC_BASE_URL: where paging links point; absent, the request's well-formed scheme and host. */
  publicBaseUrl?: string | undefined;
}

/** GET <list.path>: the query checked against the list's rules (400 naming each problem), one page. */
export function registerListRoute(app: FastifyInstance, list: ListResource, deps: ListRouteDeps): void {
  const rules = listParamRules(list);
  const statement = listPageStatement(list);
  const route = {
    onRequest: deps.authenticate,
    schema: listRoute(list).schema,
    validatorCompiler: checkedByHandler,
  };
  app.get(list.path, route, async (request, reply) => {
    const checked = checkQuery(rules, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const query = listQuery(list, checked.values);
    const row = await readListPage(deps.db, deps.totals, statement, request.tenantId, query);
    // The route's own path, not the request's URL: the links name the endpoint, not what was typed.
    const baseUrl = `${linkBase(request, deps.publicBaseUrl)}${request.routeOptions.url}`;
    return sendPage(reply, baseUrl, row, query);
  });
}
