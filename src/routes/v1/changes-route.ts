import type { FastifyInstance } from 'fastify';
import { servedGeneration } from '../../feed/generation.js';
import { readFeedPage } from '../../feed/page-reader.js';
import {
  CHANGES_PATH,
  changesQuery,
  RESTORED_AFTER_MESSAGE,
  STALE_AFTER_MESSAGE,
} from '../../feed/params.js';
import { HttpProblem } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import { changesRoute } from './changes-schemas.js';
import type { ListRouteDeps } from './list-route.js';

/**
 * GET /v1/changes (extensions.md 10): one page of one resource's changes after a cursor, for every
 * resource of src/resources/feed.ts (src/feed/page-reader.ts). The page's JSON is PostgreSQL's
 * (DateTimes and numbers as the lists write them), sent as is.
 */
export function registerChangesRoute(app: FastifyInstance, deps: Pick<ListRouteDeps, 'db' | 'authenticate'>) {
  const route = {
    onRequest: deps.authenticate,
    schema: changesRoute.schema,
    validatorCompiler: checkedByHandler,
  };
  app.get(CHANGES_PATH, route, async (request, reply) => {
    const checked = changesQuery(request.query, await servedGeneration(deps.db));
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const page = await readFeedPage(deps.db, { tenantId: request.tenantId, ...checked.query });
    if (page.refused === 'restored') {
      // Clients that follow the feed keep being refused until they download again: one line each time
      // names the event for the operator who restored (never the cursor itself).
      request.log.warn(
        { resource: checked.query.feed.name },
        'change feed cursor from a point the database no longer holds (a restore to an earlier point?): refused',
      );
      throw new HttpProblem(400, [{ field: 'after', message: RESTORED_AFTER_MESSAGE }]);
    }
    // A cursor of another numbering: changesQuery refused it already, with this same answer.
    if (page.refused) throw new HttpProblem(400, [{ field: 'after', message: STALE_AFTER_MESSAGE }]);
    return reply
      .type('application/json; charset=utf-8')
      .send(
        Buffer.from(`{"data":${page.data},"next":${JSON.stringify(page.next)},"hasMore":${page.hasMore}}`),
      );
  });
}
