import { LRUCache } from 'lru-cache';

/**
 * A small in-memory cache whose entries expire after a fixed time. Concurrent misses of one key share
 * one load. Bounded: past maxEntries the least recently used entry goes, so junk keys cannot grow it without limit.
 */
export class TtlCache<V> {
  readonly #entries: LRUCache<string, { value: V; expires: number }>;
  readonly #loading = new Map<string, Promise<V>>();
  readonly #ttlMs: number;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.#ttlMs = ttlMs;
    this.#entries = new LRUCache({ max: maxEntries });
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const entry = this.#entries.get(key);
    if (entry && entry.expires > Date.now()) return entry.value;
    const loading = this.#loading.get(key);
    if (loading) return loading;
    const pending = load()
      .then((value) => {
        this.#set(key, value);
        return value;
      })
      .finally(() => this.#loading.delete(key));
    this.#loading.set(key, pending);
    return pending;
  }

  #set(key: string, value: V): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.set(key, { value, expires: Date.now() + this.#ttlMs });
  }
}
