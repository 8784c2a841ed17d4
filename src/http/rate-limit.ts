import type { FastifyReply } from 'fastify';
import type { Database, Queryable } from '../db/database.js';
import { problems } from './problems.js';

/**
 * Rate limit per subscription key (issue 5): at most `limit` requests per fixed window of
 * `windowSeconds`, counted after authentication. Every counted answer carries the IETF draft fields
 * RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (draft-ietf-httpapi-ratelimit-headers,
 * separate fields; Reset in seconds); one over the limit gets 429 with Retry-After as well.
 *
 * On PostgreSQL the counts live in the database (table rate_limits), so instances sharing it share
 * the limit; embedded PGlite serves one process only and counts in memory.
 */

/** The count of a key in the current window after this request, and seconds until the window ends. */
export interface WindowCount {
  hits: number;
  resetSeconds: number;
}

export interface RateLimitStore {
  hit(keyId: string): Promise<WindowCount>;
}

/**
 * One statement per request: the window number comes from the database clock (instances agree even
 * when their clocks drift), the key's older windows are deleted, and the current one is incremented.
 */
const HIT_SQL = `WITH clock AS (
  SELECT extract(epoch FROM clock_timestamp()) AS t
), current_window AS (
  SELECT floor(t / $2::int)::bigint AS n, t FROM clock
), pruned AS (
  DELETE FROM rate_limits WHERE key_id = $1 AND window_no < (SELECT n FROM current_window)
)
INSERT INTO rate_limits AS r (key_id, window_no, hits)
SELECT $1, n, 1 FROM current_window
ON CONFLICT (key_id, window_no) DO UPDATE SET hits = r.hits + 1
RETURNING r.hits, ceil((r.window_no + 1) * $2::int - (SELECT t FROM current_window))::int AS reset`;

export class PostgresRateLimitStore implements RateLimitStore {
  readonly #db: Queryable;
  readonly #windowSeconds: number;

  constructor(db: Queryable, windowSeconds: number) {
    this.#db = db;
    this.#windowSeconds = windowSeconds;
  }

  async hit(keyId: string): Promise<WindowCount> {
    const [row] = await this.#db.query<{ hits: number; reset: number }>(HIT_SQL, [
      keyId,
      this.#windowSeconds,
    ]);
    return { hits: row!.hits, resetSeconds: Math.max(1, row!.reset) };
  }
}

/** Counts of one process. Bounded: past maxKeys the least recently counted key is forgotten. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counts = new Map<string, { window: number; hits: number }>();
  readonly #windowSeconds: number;
  readonly #now: () => number;
  readonly #maxKeys: number;

  constructor(windowSeconds: number, now: () => number = Date.now, maxKeys = 100_000) {
    this.#windowSeconds = windowSeconds;
    this.#now = now;
    this.#maxKeys = maxKeys;
  }

  async hit(keyId: string): Promise<WindowCount> {
    const t = this.#now() / 1000;
    const window = Math.floor(t / this.#windowSeconds);
    let entry = this.#counts.get(keyId);
    if (entry?.window !== window) entry = { window, hits: 0 };
    entry.hits++;
    this.#counts.delete(keyId);
    this.#counts.set(keyId, entry);
    if (this.#counts.size > this.#maxKeys) this.#counts.delete(this.#counts.keys().next().value!);
    return { hits: entry.hits, resetSeconds: Math.max(1, Math.ceil((window + 1) * this.#windowSeconds - t)) };
  }
}

export class RateLimiter {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly #store: RateLimitStore;

  constructor(limit: number, windowSeconds: number, store: RateLimitStore) {
    this.limit = limit;
    this.windowSeconds = windowSeconds;
    this.#store = store;
  }

  /** Counts one request of the key; sets the RateLimit fields; throws the 429 past the limit. */
  async check(keyId: string, reply: FastifyReply): Promise<void> {
    const { hits, resetSeconds } = await this.#store.hit(keyId);
    const headers = {
      'ratelimit-limit': String(this.limit),
      'ratelimit-remaining': String(Math.max(0, this.limit - hits)),
      'ratelimit-reset': String(resetSeconds),
    };
    reply.headers(headers);
    if (hits > this.limit) {
      throw problems.tooManyRequests(this.limit, this.windowSeconds, resetSeconds, headers);
    }
  }
}

export const RATE_LIMIT_WINDOW_SECONDS = 60;

/** The limiter of a database at `perMinute` requests per key and minute; none when 0 or unset. */
export function rateLimiterFor(db: Database, perMinute: number | undefined): RateLimiter | undefined {
  if (!perMinute) return undefined;
  const store =
    db.kind === 'postgres'
      ? new PostgresRateLimitStore(db, RATE_LIMIT_WINDOW_SECONDS)
      : new MemoryRateLimitStore(RATE_LIMIT_WINDOW_SECONDS);
  return new RateLimiter(perMinute, RATE_LIMIT_WINDOW_SECONDS, store);
}
