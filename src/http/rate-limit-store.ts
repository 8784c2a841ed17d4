import { LRUCache } from 'lru-cache';

/** The count of a key in the current window after this request, and seconds until the window ends. */
export interface WindowCount {
  hits: number;
  resetSeconds: number;
}

/** Milliseconds since 1970 on the clock a store counts its windows on. */
export type WindowClock = () => number;

export interface RateLimitStore {
  hit(keyId: string): Promise<WindowCount>;
}

/** Counts of one process. Bounded: past maxKeys the least recently counted key is forgotten. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counts: LRUCache<string, { window: number; hits: number }>;
  readonly #windowSeconds: number;
  readonly #now: WindowClock;

  constructor(windowSeconds: number, now: WindowClock = Date.now, maxKeys = 100_000) {
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
