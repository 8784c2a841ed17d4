import type { Queryable } from '../db/database.js';
import { type FeedResource, feedResources } from '../resources/feed.js';
import { type ChangesStatement, changesStatement, type FeedPosition, selectChanges } from '../sql/changes.js';
import { type DecodedCursor, encodeCursor, START } from './cursor.js';
import { servedGeneration } from './generation.js';

/**
 * One page of a tenant's change feed of one resource after a position (extensions.md 10): what
 * GET /v1/changes answers and what a webhook delivery sends. The page statement (src/sql/changes.ts)
 * serves only rows below its snapshot's horizon, so no write commits behind a position handed out;
 * a position is read only in the numbering of the feed it was handed out in, and only while the
 * database still holds the history it was handed out from (no restore to an earlier point since).
 */

export interface FeedPageRequest {
  tenantId: number;
  feed: FeedResource;
  /** The numbering of the feed `after` was handed out in (a cursor's, a webhook stream's). */
  generation: number;
  /** Absent: from the beginning of the feed. */
  after: DecodedCursor | undefined;
  /** The cursor `after` came in, answered again as next when the page is empty. */
  afterText?: string | undefined;
  limit: number;
  /** Serve rows only up to this one: a delivery's range read again. */
  upTo?: FeedPosition | undefined;
}

export interface FeedPage {
  readonly refused: false;
  /** The records, a JSON array as PostgreSQL wrote it (sent as is). */
  readonly data: string;
  readonly count: number;
  readonly hasMore: boolean;
  /** The last record's position; undefined when the page is empty. */
  readonly last: { readonly xid: string; readonly key: string[] } | undefined;
  /** When the page was read (microseconds since 1970, decimal text): its cursor carries it. */
  readonly handedOut: string;
  /** The numbering of the feed the page was read in. */
  readonly generation: number;
  /** The cursor after the page: its last record's, or when empty the same place again. */
  readonly next: string;
}

/**
 * Why a position is not read: `renumbered`, it is of another numbering of the feed (a restore into
 * another cluster: src/sql/feed-positions.ts); `restored`, of a history the database no longer has
 * (a restore to an earlier point: src/sql/changes.ts).
 */
export interface FeedPageRefused {
  readonly refused: 'renumbered' | 'restored';
}

/** Built at the first page: the statements of every resource of the feed. */
let statements: ReadonlyMap<string, ChangesStatement> | undefined;

function statementOf(feed: FeedResource): ChangesStatement {
  statements ??= new Map(feedResources.map((each) => [each.name, changesStatement(each)]));
  const statement = statements.get(feed.name);
  if (!statement) throw new Error(`no change feed of ${feed.name}`);
  return statement;
}

export async function readFeedPage(
  db: Queryable,
  request: FeedPageRequest,
): Promise<FeedPage | FeedPageRefused> {
  const { feed, after } = request;
  const generation = await servedGeneration(db);
  if (request.generation !== generation) return { refused: 'renumbered' };
  const row = await selectChanges(db, statementOf(feed), {
    tenantId: request.tenantId,
    after,
    handedOut: after?.handedOut,
    limit: request.limit,
    upTo: request.upTo,
  });
  if (row.refused) return { refused: 'restored' };
  const last = row.last ? { xid: row.last[0]!, key: row.last.slice(1) } : undefined;
  // Nothing new: the same place again (or the start), so polling with it misses nothing.
  const next = last
    ? encodeCursor(feed.name, last, row.handed_out, generation)
    : (request.afterText ??
      (after
        ? encodeCursor(feed.name, after, after.handedOut, generation)
        : encodeCursor(feed.name, START, row.handed_out, generation)));
  return {
    refused: false,
    data: row.data,
    count: row.count,
    hasMore: row.has_more,
    last,
    handedOut: row.handed_out,
    generation,
    next,
  };
}
