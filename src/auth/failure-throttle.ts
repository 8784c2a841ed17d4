import { LRUCache } from 'lru-cache';

/**
 * Counts recent failures per key (a client id, an address) in a sliding window and refuses a key that
 * reached its limit until its oldest failure leaves the window. In memory, per process: it slows down
 * guessing and keeps failed logins from burning scrypt time; it is not a quota shared by instances.
 * Bounded: past maxKeys the key checked or failed least recently is forgotten.
 */
export class FailureThrottle {
  readonly #failures: LRUCache<string, number[]>;
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
    if (recent.length < this.#limit) return 0;
    const freeAt = recent[recent.length - this.#limit]! + this.#windowMs;
    return Math.max(1, Math.ceil((freeAt - Date.now()) / 1000));
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
