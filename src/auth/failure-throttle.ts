import { LRUCache } from 'lru-cache';

/** An attempt holding one failure slot of a key until it ends: failed() counts it, release() frees it. */
export interface Attempt {
  failed(): void;
  release(): void;
}

/**
 * Counts recent failures per key (an address, a client id at an address) in a sliding window and
 * refuses a key that reached its limit until its oldest failure leaves the window. Attempts still
 * being checked count too (reserve() before the slow check, not a count after it): otherwise a burst
 * of concurrent attempts would all pass the check before the first failure is counted. In memory, per
 * process: it slows down guessing and keeps failed logins from burning scrypt time; it is not a quota
 * shared by instances. Bounded: past maxKeys the key checked or failed least recently is forgotten.
 */
export class FailureThrottle {
  readonly #failures: LRUCache<string, number[]>;
  /** Attempts in flight per key; an entry lives only while one does, so it needs no other bound. */
  readonly #pending = new Map<string, number>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(options: { limit: number; windowMs: number; maxKeys?: number }) {
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#failures = new LRUCache({ max: options.maxKeys ?? 10_000 });
  }

  /** Seconds until the key may try again; 0 when it may try now. */
  retryAfterSeconds(key: string): number {
    const recent = this.#recent(key);
    const pending = this.#pending.get(key) ?? 0;
    if (recent.length + pending < this.#limit) return 0;
    // Full of attempts in flight only: they end within about a second, as failures or not.
    if (recent.length < this.#limit) return 1;
    const freeAt = recent[recent.length - this.#limit]! + this.#windowMs;
    return Math.max(1, Math.ceil((freeAt - Date.now()) / 1000));
  }

  /** A slot for an attempt about to be checked; undefined when the key has none left (retryAfterSeconds > 0). */
  reserve(key: string): Attempt | undefined {
    if (this.retryAfterSeconds(key) > 0) return undefined;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    let open = true;
    const end = () => {
      if (!open) return false;
      open = false;
      const left = this.#pending.get(key)! - 1;
      if (left > 0) this.#pending.set(key, left);
      else this.#pending.delete(key);
      return true;
    };
    return {
      failed: () => {
        if (end()) this.recordFailure(key);
      },
      release: () => {
        end();
      },
    };
  }

  recordFailure(key: string): void {
    const recent = this.#recent(key);
    recent.push(Date.now());
    // Only the last `limit` failures decide; older ones need not be kept.
    if (recent.length > this.#limit) recent.splice(0, recent.length - this.#limit);
    this.#failures.set(key, recent);
  }

  reset(key: string): void {
    this.#failures.delete(key);
  }

  #recent(key: string): number[] {
    const since = Date.now() - this.#windowMs;
    const recent = (this.#failures.get(key) ?? []).filter((time) => time > since);
    if (recent.length === 0) this.#failures.delete(key);
    return recent;
  }
}
