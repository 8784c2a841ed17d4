import type { FeedResource } from '../resources/feed.js';
import type { FeedPosition } from '../sql/changes.js';

/**
 * The change feed's cursor (extensions.md 10): opaque to clients, base64url of a small JSON object
 * {"r": resource, "x": xid8 as text, "k": [key values as text] or null, "t": when it was handed out},
 * plus "g": the generation of the feed's numbering once a restore into another cluster began a new one
 * (src/sql/feed-positions.ts; absent: generation 0). "t" (microseconds since 1970, the database's
 * clock) lets the page tell a cursor from a history the database no longer has (a restore to an
 * earlier point: src/sql/changes.ts); cursors from before it was added have none. It never names the
 * tenant: the tenant comes from the credentials, so a cursor passed to another tenant reads that
 * tenant's rows only. It never expires: a position in (change_xid, key) order stays meaningful for
 * ever, within its generation and its history.
 */

interface CursorBody {
  r: string;
  x: string;
  k: string[] | null;
  t?: string;
  g?: number;
}

/** A cursor's position, and when it was handed out (undefined for a cursor from before "t"). */
export interface DecodedCursor extends FeedPosition {
  readonly handedOut: string | undefined;
}

/** The field sets of cursors this service writes or wrote: with and without "t" and "g". */
const FIELD_SETS = new Set(['k,r,x', 'g,k,r,x', 'k,r,t,x', 'g,k,r,t,x']);
/** Microseconds since 1970: positive, and short enough for any date a clock can show. */
const MICROSECONDS = /^[1-9]\d{0,17}$/;

/** A cursor of this resource from another generation of the feed's numbering. */
export const STALE = Symbol('stale cursor');

/** The largest xid8 (2^64 - 1): past it PostgreSQL would refuse the cast with an error, not a 400. */
const MAX_XID8 = 18_446_744_073_709_551_615n;
const XID = /^(0|[1-9]\d{0,19})$/;
/** A numeric key as PostgreSQL prints it (factors.unit, routes.day). */
const NUMERIC = /^-?\d{1,40}(\.\d{1,40})?$/;
/** What a key value must look like to be cast to its column's type without an error. */
const KEY_TEXT: Partial<Record<string, RegExp>> = { text: /^/su, numeric: NUMERIC, integer: /^-?\d{1,9}$/ };
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** A surrogate not paired (with the u flag a pair is one code point, not of category Cs). */
const LONE_SURROGATE = /\p{Cs}/u;

export function encodeCursor(
  resource: string,
  position: FeedPosition,
  /** Undefined: a position whose time is not known (from a cursor older than "t"), written without it. */
  handedOut: string | undefined,
  generation = 0,
): string {
  const body: CursorBody = {
    r: resource,
    x: position.xid,
    k: position.key ? [...position.key] : null,
    t: handedOut,
  };
  if (generation > 0) body.g = generation;
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/** The position a feed starts from: before the first row of any transaction. */
export const START: FeedPosition = { xid: '0', key: null };

/**
 * The position of a cursor of this resource, or undefined when it is not one: not base64url JSON of
 * the right shape, another resource's, or with a key that its columns could not compare. STALE when
 * it is one of another generation than the feed's (`generation`): its position means nothing now.
 */
export function decodeCursor(
  feed: FeedResource,
  text: string,
  generation: number,
): DecodedCursor | typeof STALE | undefined {
  if (!BASE64URL.test(text)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  // Exactly the fields this service writes: anything else was not made here.
  const fields = Object.keys(body).sort().join();
  if (!FIELD_SETS.has(fields)) return undefined;
  const { r, x, k, t, g } = body as Partial<CursorBody>;
  if (g !== undefined && !(Number.isSafeInteger(g) && g > 0)) return undefined;
  if (t !== undefined && !(typeof t === 'string' && MICROSECONDS.test(t))) return undefined;
  if (r !== feed.name || typeof x !== 'string' || !XID.test(x) || BigInt(x) > MAX_XID8) return undefined;
  if ((g ?? 0) !== generation) return STALE;
  if (k === null) return { xid: x, key: null, handedOut: t };
  const { key } = feed.source;
  if (!Array.isArray(k) || k.length !== key.length) return undefined;
  for (const [at, value] of k.entries()) {
    // A lone surrogate would reach PostgreSQL as U+FFFD and compare as another key.
    if (typeof value !== 'string' || value.includes('\u0000') || LONE_SURROGATE.test(value)) return undefined;
    if (!KEY_TEXT[feed.source.fields[key[at]!]!.sqlType]?.test(value)) return undefined;
  }
  return { xid: x, key: k, handedOut: t };
}
