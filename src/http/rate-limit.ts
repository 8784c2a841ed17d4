import type { FastifyReply } from 'fastify';
import type { Database } from '../db/database.js';
import { problems } from './problems.js';
import { LeasingRateLimitStore } from './rate-limit-leases.js';
import { MemoryRateLimitStore, type RateLimitStore, type WindowClock } from './rate-limit-store.js';

export { LeasingRateLimitStore, leaseSize } from './rate-limit-leases.js';
export {
  MemoryRateLimitStore,
  type RateLimitStore,
  type WindowClock,
  type WindowCount,
} from './rate-limit-store.js';

/**
 * Rate limit per subscription key: at most `limit` requests per fixed window of `windowSeconds`,
 * counted after authentication. Every counted answer carries the IETF draft fields RateLimit-Limit,
 * RateLimit-Remaining and RateLimit-Reset (draft-ietf-httpapi-ratelimit-headers, separate fields;
 * Reset in seconds); one over the limit gets 429 with Retry-After as well.
 */

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

/**
 * The limiter of a database at `perMinute` requests per key and minute; none when 0 or unset.
 * Windows are counted on `clock` when given (tests), else on the database's clock (PostgreSQL) or
 * this process's (in memory).
 */
export function rateLimiterFor(
  db: Database,
  perMinute: number | undefined,
  clock?: WindowClock,
): RateLimiter | undefined {
  if (!perMinute) return undefined;
  // One process alone on its database counts in memory: no round trip, and no table of counts to keep
  // up on a database without autovacuum.
  const store = db.sharedByProcesses
    ? new LeasingRateLimitStore(db, perMinute, RATE_LIMIT_WINDOW_SECONDS, undefined, undefined, clock)
    : new MemoryRateLimitStore(RATE_LIMIT_WINDOW_SECONDS, clock);
  return new RateLimiter(perMinute, RATE_LIMIT_WINDOW_SECONDS, store);
}
