import { call } from './answers.js';

/*
 * The change feed (extensions section 10) as the drill reads it: readers that follow `next` while the
 * load runs, the whole feed read once the load is over, and the one check both readers and the webhook
 * receiver must pass: what a client received, each record taken at its last arrival, is the feed in
 * its order.
 */

export type FeedRecord = Record<string, unknown>;

/** The record's key fields, by resource. */
export function keyOf(resource: string, record: FeedRecord): string {
  if (resource === 'prices') return `${record.product_code}|${record.price_list}`;
  return String(record.code);
}

export interface FeedPage {
  data: FeedRecord[];
  next: string;
  hasMore: boolean;
}

const pagePath = (resource: string, after: string | undefined) =>
  `/v1/changes?resource=${resource}&limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`;

/** The feed from `after` (the start when absent) to its end, reading until hasMore is false. */
export async function readWholeFeed(
  baseUrl: string,
  headers: Readonly<Record<string, string>>,
  resource: string,
  after?: string,
): Promise<FeedRecord[]> {
  const records: FeedRecord[] = [];
  let cursor = after;
  for (;;) {
    const answer = await call(baseUrl, 'other', 'GET', pagePath(resource, cursor), headers);
    if (answer.status !== 200)
      throw new Error(`reading the ${resource} feed: ${answer.status} ${JSON.stringify(answer.body)}`);
    const page = answer.body as FeedPage;
    records.push(...page.data);
    cursor = page.next;
    if (!page.hasMore) return records;
  }
}

/**
 * Where a client's records differ from the feed: null when, each record taken at its last arrival,
 * they are the feed exactly (same records, same values, same order).
 */
export function differenceFromFeed(
  resource: string,
  received: FeedRecord[],
  feed: FeedRecord[],
): string | null {
  const last = new Map<string, { at: number; record: FeedRecord }>();
  received.forEach((record, at) => {
    last.set(keyOf(resource, record), { at, record });
  });
  const reduced = [...last.values()].sort((a, b) => a.at - b.at).map((entry) => entry.record);
  if (reduced.length !== feed.length) {
    const feedKeys = new Set(feed.map((record) => keyOf(resource, record)));
    const missing = feed.filter((record) => !last.has(keyOf(resource, record))).slice(0, 3);
    const extra = reduced.filter((record) => !feedKeys.has(keyOf(resource, record))).slice(0, 3);
    return `${reduced.length} records, the feed has ${feed.length}; missing ${JSON.stringify(missing.map((r) => keyOf(resource, r)))}, not in the feed ${JSON.stringify(extra.map((r) => keyOf(resource, r)))}`;
  }
  for (let at = 0; at < feed.length; at++) {
    const got = JSON.stringify(reduced[at]);
    const want = JSON.stringify(feed[at]);
    if (got !== want)
      return `record ${at} differs: received ${got.slice(0, 200)}, feed ${want.slice(0, 200)}`;
  }
  return null;
}

export interface FeedReaderResult {
  resource: string;
  /** Records since the last time the reader started (from the start of the feed). */
  records: FeedRecord[];
  /** 400 answers naming `after`, each making the reader download again from the start. */
  refusals: string[];
  pages: number;
}

/**
 * Follows the feed of one resource across the instances until stopped, then reads on until an answer
 * says hasMore false. A 400 naming `after` (a cursor past the history of a promoted standby) starts
 * it over; "come back" answers are waited out.
 */
export async function followFeed(
  instances: readonly string[],
  headers: Readonly<Record<string, string>>,
  resource: string,
  stopped: () => boolean,
): Promise<FeedReaderResult> {
  const result: FeedReaderResult = { resource, records: [], refusals: [], pages: 0 };
  let cursor: string | undefined;
  for (let turn = 0; ; turn++) {
    const answer = await call(
      instances[turn % instances.length]!,
      'other',
      'GET',
      pagePath(resource, cursor),
      headers,
    );
    if (answer.status === 200) {
      const page = answer.body as FeedPage;
      result.pages++;
      result.records.push(...page.data);
      cursor = page.next;
      if (!page.hasMore) {
        if (stopped()) return result;
        await new Promise((done) => setTimeout(done, 200));
      }
    } else if (answer.status === 400 && JSON.stringify(answer.body).includes('after')) {
      result.refusals.push(JSON.stringify(answer.body));
      result.records = [];
      cursor = undefined;
    } else if (answer.status >= 400 && answer.status < 500) {
      throw new Error(`feed reader of ${resource}: ${answer.status} ${JSON.stringify(answer.body)}`);
    } else {
      await new Promise((done) => setTimeout(done, 250));
    }
  }
}

/** Records that arrive again unchanged (same key, same values): a duplicate the client cannot tell apart. */
export function unchangedRepeats(resource: string, received: FeedRecord[]): number {
  const seen = new Map<string, string>();
  let repeats = 0;
  for (const record of received) {
    const key = keyOf(resource, record);
    const text = JSON.stringify(record);
    if (seen.get(key) === text) repeats++;
    seen.set(key, text);
  }
  return repeats;
}
