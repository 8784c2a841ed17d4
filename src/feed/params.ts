import { checkQuery, type ParamError, type ParamRule } from '../read/query-params.js';
import { type FeedResource, feedResourceNamed, feedResources } from '../resources/feed.js';
import { type DecodedCursor, decodeCursor, STALE } from './cursor.js';

/** Where the feed is served (extensions.md 10): the route and the OpenAPI document. */
export const CHANGES_PATH = '/v1/changes';

/** Page size of the feed (extensions.md 10): the customer list's own bounds. */
export const CHANGES_LIMIT = { max: 1000, default: 100 } as const;
/** Longer than any cursor the service writes (a few hundred characters at the longest keys). */
const MAX_CURSOR_LENGTH = 1024;

/**
 * The feed's query rules, in documented order. `resource` has no default: it is required, which the
 * rules cannot say, so changesQuery checks it first (its rule's default is never used).
 */
export const changesParamRules: Readonly<Record<string, ParamRule>> = {
  resource: { kind: 'choice', values: feedResources.map((feed) => feed.name), default: '' },
  after: { kind: 'text', max: MAX_CURSOR_LENGTH },
  limit: { kind: 'integer', min: 1, max: CHANGES_LIMIT.max, default: CHANGES_LIMIT.default },
};

export const AFTER_MESSAGE = 'Parameter must be the next cursor of an earlier answer for this resource';
/** A cursor of another numbering of the feed (a restore: src/sql/feed-positions.ts). */
export const STALE_AFTER_MESSAGE =
  'Cursor is from another numbering of the feed (a database restore): download again without after';

/** A cursor of a history the database no longer has (a restore to an earlier point: src/sql/changes.ts). */
export const RESTORED_AFTER_MESSAGE =
  'Cursor is from a point the database no longer holds (a restore to an earlier point): download again without after';

export interface ChangesQuery {
  feed: FeedResource;
  /** Absent: from the beginning. */
  after: DecodedCursor | undefined;
  /** The cursor as sent, answered as next when the page is empty. */
  afterText: string | undefined;
  limit: number;
  /** The numbering of the feed the cursor was checked against (src/sql/feed-positions.ts). */
  generation: number;
}

/** A feed request's query checked (extensions.md 6 and 10): the query, or every problem with it. */
export function changesQuery(
  query: unknown,
  /** The generation of the feed's cursors (src/sql/feed-positions.ts). */
  generation: number,
): { ok: true; query: ChangesQuery } | { ok: false; errors: ParamError[] } {
  const given = (query ?? {}) as Record<string, unknown>;
  const errors: ParamError[] = [];
  if (!Object.hasOwn(given, 'resource')) errors.push({ field: 'resource', message: 'Parameter is required' });
  const checked = checkQuery(changesParamRules, query);
  if (!checked.ok) errors.push(...checked.errors);
  if (!checked.ok || errors.length > 0) return { ok: false, errors };
  const feed = feedResourceNamed(checked.values.resource as string)!;
  const afterText = checked.values.after as string | undefined;
  const after = afterText === undefined ? undefined : decodeCursor(feed, afterText, generation);
  if (after === STALE) return { ok: false, errors: [{ field: 'after', message: STALE_AFTER_MESSAGE }] };
  if (afterText !== undefined && after === undefined) {
    return { ok: false, errors: [{ field: 'after', message: AFTER_MESSAGE }] };
  }
  return { ok: true, query: { feed, after, afterText, limit: checked.values.limit as number, generation } };
}
