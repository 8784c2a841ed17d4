import type { FastifyInstance } from 'fastify';
import { HttpProblem } from '../http/problems.js';
import { feedResources } from '../resources/feed.js';
import { type ChangesStatement, changesStatement, selectChanges } from '../sql/changes.js';
import { encodeCursor, START } from './changes-cursor.js';
import { changesQuery } from './changes-params.js';
import { servedGeneration } from './feed-renumbering.js';
import type { ListRouteDeps } from './list-route.js';

export const CHANGES_PATH = '/v1/changes';

/**
 * GET /v1/changes (extensions.md 10): one page of one resource's changes after a cursor, for every
 * resource of src/resources/feed.ts. The page's JSON is PostgreSQL's (DateTimes and numbers as the
 * lists write them), sent as is.
 */
export function registerChangesRoute(app: FastifyInstance, deps: Pick<ListRouteDeps, 'db' | 'authenticate'>) {
  const statements = new Map<string, ChangesStatement>(
    feedResources.map((feed) => [feed.name, changesStatement(feed)]),
  );
  app.get(CHANGES_PATH, { onRequest: deps.authenticate }, async (request, reply) => {
    const generation = await servedGeneration(deps.db);
    const checked = changesQuery(request.query, generation);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const { feed, after, afterText, limit } = checked.query;
    const row = await selectChanges(deps.db, statements.get(feed.name)!, {
      tenantId: request.tenantId,
      after,
      limit,
    });
    // Nothing new: the same place again (or the start), so polling with it misses nothing.
    const next = row.last
      ? encodeCursor(feed.name, { xid: row.last[0]!, key: row.last.slice(1) }, generation)
      : (afterText ?? encodeCursor(feed.name, START, generation));
    return reply
      .type('application/json; charset=utf-8')
      .send(Buffer.from(`{"data":${row.data},"next":${JSON.stringify(next)},"hasMore":${row.has_more}}`));
  });
}
