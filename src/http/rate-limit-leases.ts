import { LRUCache } from 'lru-cache';
import type { Queryable } from '../db/database.js';
import { isConnectionError } from '../db/failures.js';
import { claimRateLimitHits } from '../sql/rate-limits.js';
import type { RateLimitStore, WindowClock, WindowCount } from './rate-limit-store.js';

/**
 * When other processes share the database (PostgreSQL), the counts live in it (table rate_limits),
 * so the instances share the limit; a database of one process (embedded PGlite) counts in memory.
 * A statement per request would cost every request a round trip, so an instance claims quota
 * leases: a block of leaseSize(limit) hits of a key at a time (more when more of its requests are
 * waiting), served from memory. The guarantee: instances sharing one PostgreSQL never admit more than
 * `limit` requests of a key per window in total, while the database takes writes (LocalCount below).
 * What is given up: a key near its limit may be refused up to leaseSize(limit) - 1 requests early for
 * each other instance holding part of a block, and the counts one instance shows (RateLimit-Remaining)
 * do not include requests another instance serves from a block it already holds. Kept for its
 * measured gain: about 2 ms of the 4.5 ms of a limit=100 page
 * (docs/decisions/0045-rate-limit-quota-leases.md); test/http/rate-limit.test.ts checks it admits
 * what exact counting does, never more.
 */

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

/**
 * The key counted by this instance alone, while the database takes no writes (a standby standing in
 * for a lost primary, decision 0147): reads go on answering, each instance admitting up to the limit
 * for the window, and the shared count is tried again after LOCAL_RETRY_MS.
 */
interface LocalCount {
  end: number;
  used: number;
  retryAt: number;
}

/** How long a key is counted locally before its shared count is tried again. */
const LOCAL_RETRY_MS = 1_000;

interface KeyState {
  lease?: Lease | undefined;
  local?: LocalCount | undefined;
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
  readonly #windowClock: WindowClock | undefined;

  /**
   * `now` times the leases (monotonic ms); with `windowClock` (tests) the windows are counted on that
   * clock instead of the database's, and the leases timed on it too.
   */
  constructor(
    db: Pick<Queryable, 'query'>,
    limit: number,
    windowSeconds: number,
    now: () => number = () => performance.now(),
    maxKeys = 100_000,
    windowClock?: WindowClock,
  ) {
    this.#db = db;
    this.#limit = limit;
    this.#size = leaseSize(limit);
    this.#windowSeconds = windowSeconds;
    this.#now = windowClock ?? now;
    this.#windowClock = windowClock;
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
      if (state.local && now >= state.local.end) state.local = undefined;
      if (state.local && now < state.local.retryAt) return this.#countLocally(state.local, now);
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
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        const at = this.#now();
        state.local ??= { end: at + this.#windowSeconds * 1000, used: 0, retryAt: 0 };
        state.local.retryAt = at + LOCAL_RETRY_MS;
        return this.#countLocally(state.local, at);
      } finally {
        state.waiting--;
      }
    }
  }

  #countLocally(local: LocalCount, now: number): WindowCount {
    local.used++;
    return { hits: local.used, resetSeconds: Math.max(1, Math.ceil((local.end - now) / 1000)) };
  }

  async #claim(keyId: string, state: KeyState, size: number): Promise<void> {
    // Read before the statement: the lease then ends no later than the database's window does.
    const sent = this.#now();
    const { total, leftMs } = await claimRateLimitHits(
      this.#db,
      keyId,
      this.#windowSeconds,
      size,
      this.#windowClock && sent / 1000,
    );
    const base = total - size;
    state.local = undefined;
    state.lease = {
      end: sent + leftMs,
      base,
      granted: Math.min(size, Math.max(0, this.#limit - base)),
      used: 0,
      exhausted: total >= this.#limit,
    };
  }
}
