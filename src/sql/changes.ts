import type { Queryable } from '../db/database.js';
import { ident } from '../db/sql.js';
import type { FeedResource } from '../resources/feed.js';
import { listPageStatement } from './list-page.js';
import { selectList } from './select-list.js';

/**
 * The page statement of the change feed (GET /v1/changes, extensions.md 10; migration 008), built
 * once per resource from its declaration (src/resources/feed.ts).
 *
 * Rows are served in (change_xid, key) order, after the cursor's position, and only those whose
 * change_xid is below the xmin of the statement's own snapshot: every transaction still running (and
 * every later one) has an xid at or above it, so no write can ever commit behind a position this page
 * hands out. A row written by a transaction still running at read time, or whose xid is above xmin
 * while an older transaction runs, waits for a later page: delayed, never lost
 * (docs/decisions/0061-feed-held-back-by-running-transactions.md).
 *
 * The keyset condition is one range of the (tenant_id, change_xid, key) index: a page costs the same
 * at any depth. One row more than the limit is read to tell whether there is more.
 */

/**
 * The predicate of the feed's partial indexes (migration 012), true of every row: a statement that
 * states it may use them, and only such statements do (a lookup by key keeps to the primary key).
 */
export function feedIndexCondition(alias: string): string {
  return `${alias}.change_xid > '0'::xid8`;
}

/**
 * What moves a row to the writing transaction's place in the feed (migrations 008 and 013): every
 * statement that changes an existing row sets both (a new row gets both from the columns' defaults).
 * changed_at is the transaction's start, before its commit: in one history every row at or behind a
 * position handed out at time T has changed_at <= T (selectChanges checks it).
 */
export const FEED_MOVE = 'change_xid = pg_current_xact_id(), changed_at = now()';

/** What does not change between requests of one resource, built once at start. */
export interface ChangesStatement {
  readonly feed: FeedResource;
  /** The statement with and without a keyset position. */
  readonly first: string;
  readonly after: string;
  /** The statement after a start position (an empty feed's cursor): every row from an xid on. */
  readonly fromXid: string;
  /** How many key values a position carries, in key order. */
  readonly keyLength: number;
  /**
   * The same three, served only up to a last row (its position in the parameters after the others):
   * a webhook delivery attempted again reads the range it read first (src/webhooks/).
   */
  readonly upTo: { readonly first: string; readonly after: string; readonly fromXid: string };
}

/** A place in the feed: the last row served, or (key null) the start of a transaction's rows. */
export interface FeedPosition {
  /** xid8 as decimal text. */
  readonly xid: string;
  /** The key's values as text (a numeric key in PostgreSQL's own spelling), or null. */
  readonly key: readonly string[] | null;
}

/** One page: its JSON array text, the last row's position, and whether more rows follow. */
export interface ChangesRow {
  data: string;
  /** [xid, ...key] of the last row served; null when the page is empty. */
  last: string[] | null;
  has_more: boolean;
  /** How many records the page holds. */
  count: number;
  /**
   * True when the position sent is not of this database's history (a restore to an earlier point):
   * ahead of its transaction counter, or with a row behind it that changed after the cursor was
   * handed out. The page is then not to be served.
   */
  refused: boolean;
  /** The time this page was read (microseconds since 1970, decimal text), which its cursor carries. */
  handed_out: string;
}

export function changesStatement(feed: FeedResource): ChangesStatement {
  const { source, list } = feed;
  const listed = list ? listPageStatement(list) : undefined;
  const a = listed?.alias ?? source.table[0]!;
  const extra = selectList(feed.extra, a);
  const columns = [listed ? listed.columns : selectList(source.fields, a), extra].filter(Boolean).join(', ');
  const keyNames = source.key.map(ident);
  const keys = keyNames.map((k) => `${a}.${k}`);
  const order = [`${a}.change_xid`, ...keys].join(', ');
  // The key's values as the cursor carries them, compared back with each field's own type.
  const casts = source.key.map((name) => source.fields[name]!.sqlType);
  const keyParams = casts.map((type, at) => `$${at + 5}::${type}`);
  // The last row at or behind a position ($3, and $5... for its key): one step backwards through
  // the feed's index. In one history it changed before the cursor was handed out ($4, microseconds;
  // null for a cursor from before migration 013, whose rows behind it all carry '-infinity').
  const behind = (atOrBehind: string) => `
  SELECT b.changed_at FROM ${ident(source.table)} b
  WHERE b.tenant_id = $1 AND ${feedIndexCondition('b')} AND ${atOrBehind}
  ORDER BY ${['b.change_xid', ...keyNames.map((k) => `b.${k}`)].map((c) => `${c} DESC`).join(', ')}
  LIMIT 1`;
  // Rows at or before a last row whose position is in the parameters from $at on.
  const bound = (at: number) =>
    `\n    AND (${order}) <= ($${at}::xid8, ${casts.map((type, i) => `$${at + 1 + i}::${type}`).join(', ')})`;
  const build = (position: string, atOrBehind?: string) => `WITH page AS (
  SELECT row_number() OVER (ORDER BY ${order}) AS n,
         ARRAY[${a}.change_xid::text, ${keys.map((k) => `${k}::text`).join(', ')}] AS position,
         to_json(shown) AS doc
  FROM ${ident(source.table)} ${a} CROSS JOIN LATERAL (SELECT ${columns}) shown
  WHERE ${a}.tenant_id = $1
    AND ${a}.change_xid < pg_snapshot_xmin(pg_current_snapshot())
    AND ${feedIndexCondition(a)}${position}
  ORDER BY ${order}
  LIMIT $2::int + 1
)
SELECT COALESCE((SELECT json_agg(doc ORDER BY n) FROM page WHERE n <= $2), '[]'::json)::text AS data,
       (SELECT position FROM page WHERE n <= $2 ORDER BY n DESC LIMIT 1) AS last,
       (SELECT count(*) FROM page) > $2 AS has_more,
       LEAST((SELECT count(*) FROM page), $2)::int AS count,
       ${
         atOrBehind
           ? `($3::xid8 >= pg_snapshot_xmax(pg_current_snapshot())
         OR COALESCE(extract(epoch FROM (${behind(atOrBehind)})) * 1000000
                     > COALESCE($4::numeric, '-Infinity'::numeric), false))`
           : 'false'
       } AS refused,
       (extract(epoch FROM clock_timestamp()) * 1000000)::int8::text AS handed_out`;
  const bKeys = keyNames.map((k) => `b.${k}`);
  const afterPosition = `\n    AND (${order}) > ($3::xid8, ${keyParams.join(', ')})`;
  const afterBehind = `(b.change_xid, ${bKeys.join(', ')}) <= ($3::xid8, ${keyParams.join(', ')})`;
  const fromXidPosition = `\n    AND ${a}.change_xid >= $3::xid8`;
  const fromXidBehind = 'b.change_xid < $3::xid8';
  return {
    feed,
    first: build(''),
    after: build(afterPosition, afterBehind),
    fromXid: build(fromXidPosition, fromXidBehind),
    keyLength: source.key.length,
    upTo: {
      first: build(bound(3)),
      after: build(afterPosition + bound(5 + casts.length), afterBehind),
      fromXid: build(fromXidPosition + bound(5), fromXidBehind),
    },
  };
}

export interface ChangesRequest {
  tenantId: number;
  /** Absent: from the beginning of the feed. */
  after: FeedPosition | undefined;
  /** When the cursor of `after` was handed out (microseconds since 1970); undefined: not known. */
  handedOut?: string | undefined;
  limit: number;
  /** Serve rows only up to this one (its key set): a delivery's range read again. */
  upTo?: FeedPosition | undefined;
}

/** The statement of one page and its parameters (also the benchmarks' raw floor). */
export function changesPageQuery(
  statement: ChangesStatement,
  request: ChangesRequest,
): { sql: string; params: unknown[] } {
  const { after, upTo } = request;
  const base = [request.tenantId, request.limit];
  const statements = upTo ? statement.upTo : statement;
  const bound = upTo ? [upTo.xid, ...(upTo.key ?? [])] : [];
  if (upTo && upTo.key?.length !== statement.keyLength) throw new Error('upTo must be the position of a row');
  if (after?.key) {
    const params = [...base, after.xid, request.handedOut ?? null, ...after.key, ...bound];
    return { sql: statements.after, params };
  }
  if (after)
    return { sql: statements.fromXid, params: [...base, after.xid, request.handedOut ?? null, ...bound] };
  return { sql: statements.first, params: [...base, ...bound] };
}

/** One page of the tenant's changes of one resource. */
export async function selectChanges(
  db: Queryable,
  statement: ChangesStatement,
  request: ChangesRequest,
): Promise<ChangesRow> {
  const { sql, params } = changesPageQuery(statement, request);
  const [row] = await db.query<ChangesRow>(sql, params);
  return row!;
}
