import type { FastifyReply } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Database, Queryable } from '../db/database.js';
import { claimRateLimitHits } from '../sql/rate-limits.js';
import { problems } from './problems.js';

/**
 * Rate limit per subscription key: at most `limit` requests per fixed window of `windowSeconds`,
 * counted after authentication. Every counted answer carries the IETF draft fields RateLimit-Limit,
 * RateLimit-Remaining and RateLimit-Reset (draft-ietf-httpapi-ratelimit-headers, separate fields;
 * Reset in seconds); one over the limit gets 429 with Retry-After as well.
 *
 * When other processes share the database (PostgreSQL), the counts live in it (table rate_limits),
 * so the instances share the limit; a database of one process (embedded PGlite) counts in memory.
 * A statement per request would cost every request a round trip, so an instance claims quota
 * leases: a block of leaseSize(limit) hits of a key at a time (more when more of its requests are
 * waiting), served from memory. The guarantee: instances sharing one PostgreSQL never admit more than
 * `limit` requests of a key per window in total. What is given up: a key near its limit may be
 * refused up to leaseSize(limit) - 1 requests early for each other instance holding part of a block,
 * and the counts one instance shows (RateLimit-Remaining) do not include requests another instance
 * serves from a block it already holds.
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
 * Hits claimed per statement: 1% of the limit, so that the requests an instance may refuse early
 * (an unused part of a block held by another instance) stay a small share of the limit, and at most
 * 100, past which the statements saved no longer matter. A limit under 200 claims one hit at a time
 * (exact, one statement per request) unless several requests of the key wait for the same claim.
 */
export function leaseSize(limit: number): number {
  return Math.min(100, Math.max(1, Math.floor(limit / 100)));
}

/** A block of one key, claimed for the current window. */
interface Lease {
  /** When the window ends, on the store's monotonic clock (ms). */
  end: number;
  /** The total claimed by every instance before this block. */
  base: number;
  /** The hits of the block under the limit, and those served. */
  granted: number;
  used: number;
  /** The total claimed reached the limit: no block is left to claim in this window. */
  exhausted: boolean;
}

interface KeyState {
  lease?: Lease | undefined;
  /** The claim in flight: concurrent requests of the key wait for it instead of sending their own. */
  claim?: Promise<void> | undefined;
  /**
   * Requests of the key waiting for a hit. A claim asks for at least that many, so that a burst
   * under a small limit (a block of 1) costs two claims, not one round trip after another per request.
   */
  waiting: number;
}

/** Counts in PostgreSQL by quota leases (see the top of the file). Bounded like MemoryRateLimitStore. */
export class LeasingRateLimitStore implements RateLimitStore {
  readonly #keys: LRUCache<string, KeyState>;
  readonly #db: Pick<Queryable, 'query'>;
  readonly #limit: number;
  readonly #size: number;
  readonly #windowSeconds: number;
  readonly #now: () => number;

  constructor(
    db: Pick<Queryable, 'query'>,
    limit: number,
    windowSeconds: number,
    now: () => number = () => performance.now(),
    maxKeys = 100_000,
  ) {
    this.#db = db;
    this.#limit = limit;
    this.#size = leaseSize(limit);
    this.#windowSeconds = windowSeconds;
    this.#now = now;
    this.#keys = new LRUCache({ max: maxKeys });
  }

  async hit(keyId: string): Promise<WindowCount> {
    // Each turn either answers or waits for a claim, which grants a hit or ends the window's claims.
    for (;;) {
      let state = this.#keys.get(keyId);
      if (!state) {
        state = { waiting: 0 };
        this.#keys.set(keyId, state);
      }

      const now = this.#now();
      if (state.lease && now >= state.lease.end) state.lease = undefined;
      const lease = state.lease;
      if (lease) {
        const resetSeconds = Math.max(1, Math.ceil((lease.end - now) / 1000));
        if (lease.used < lease.granted) {
          lease.used++;
          return { hits: lease.base + lease.used, resetSeconds };
        }
        if (lease.exhausted) return { hits: this.#limit + 1, resetSeconds };
      }
      // Cleared once settled (a .finally callback runs only after the assignment): a failed claim
      // is not kept, the next request claims again.
      state.waiting++;
      state.claim ??= this.#claim(keyId, state, Math.max(this.#size, state.waiting)).finally(() => {
        state.claim = undefined;
      });
      try {
        await state.claim;
      } finally {
        state.waiting--;
      }
    }
  }

  async #claim(keyId: string, state: KeyState, size: number): Promise<void> {
    // Read before the statement: the lease then ends no later than the database's window does.
    const sent = this.#now();
    const { total, leftMs } = await claimRateLimitHits(this.#db, keyId, this.#windowSeconds, size);
    const base = total - size;
    state.lease = {
      end: sent + leftMs,
      base,
      granted: Math.min(size, Math.max(0, this.#limit - base)),
      used: 0,
      exhausted: total >= this.#limit,
    };
  }
}

/** Counts of one process. Bounded: past maxKeys the least recently counted key is forgotten. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counts: LRUCache<string, { window: number; hits: number }>;
  readonly #windowSeconds: number;
  readonly #now: () => number;

  constructor(windowSeconds: number, now: () => number = Date.now, maxKeys = 100_000) {
    this.#windowSeconds = windowSeconds;
    this.#now = now;
    this.#counts = new LRUCache({ max: maxKeys });
  }

  async hit(keyId: string): Promise<WindowCount> {
    const t = this.#now() / 1000;
    const window = Math.floor(t / this.#windowSeconds);
    let entry = this.#counts.get(keyId);
    if (entry?.window !== window) entry = { window, hits: 0 };
    entry.hits++;
    this.#counts.set(keyId, entry);
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
  // One process alone on its database counts in memory: no round trip, and no table of counts to keep
  // up on a database without autovacuum.
  const store = db.sharedByProcesses
    ? new LeasingRateLimitStore(db, perMinute, RATE_LIMIT_WINDOW_SECONDS)
    : new MemoryRateLimitStore(RATE_LIMIT_WINDOW_SECONDS);
  return new RateLimiter(perMinute, RATE_LIMIT_WINDOW_SECONDS, store);
}
