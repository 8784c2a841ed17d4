import type { FastifyInstance } from 'fastify';
import { encodeCursor, START } from '../../feed/cursor.js';
import { servedGeneration } from '../../feed/generation.js';
import { CHANGES_PATH, changesQuery, RESTORED_AFTER_MESSAGE } from '../../feed/params.js';
import { HttpProblem } from '../../http/problems.js';
import { feedResources } from '../../resources/feed.js';
import { type ChangesStatement, changesStatement, selectChanges } from '../../sql/changes.js';
import type { ListRouteDeps } from './list-route.js';

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
      handedOut: after?.handedOut,
      limit,
    });
    if (row.refused) {
      // Clients that follow the feed keep being refused until they download again: one line each time
      // names the event for the operator who restored (never the cursor itself).
      request.log.warn(
        { resource: feed.name },
        'change feed cursor from a point the database no longer holds (a restore to an earlier point?): refused',
      );
      throw new HttpProblem(400, [{ field: 'after', message: RESTORED_AFTER_MESSAGE }]);
    }
    // Nothing new: the same place again (or the start), so polling with it misses nothing.
    const next = row.last
      ? encodeCursor(feed.name, { xid: row.last[0]!, key: row.last.slice(1) }, row.handed_out, generation)
      : (afterText ?? encodeCursor(feed.name, START, row.handed_out, generation));
    return reply
      .type('application/json; charset=utf-8')
      .send(Buffer.from(`{"data":${row.data},"next":${JSON.stringify(next)},"hasMore":${row.has_more}}`));
  });
}
