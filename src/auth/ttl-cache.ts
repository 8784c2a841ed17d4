import { LRUCache } from 'lru-cache';

/**
 * A small in-memory cache whose entries expire after a fixed time. Concurrent misses of one key share
 * one load. Bounded: past maxEntries the least recently used entry goes, so junk keys cannot grow it without limit.
 */
export class TtlCache<V> {
  readonly #entries: LRUCache<string, { value: V; expires: number }>;
  readonly #loading = new Map<string, Promise<V>>();
  readonly #ttlMs: number;

  readonly #keep: (value: V) => boolean;

  /** keep: which loaded values are cached (by default all); the others are loaded again next time. */
  constructor(ttlMs: number, maxEntries = 10_000, keep: (value: V) => boolean = () => true) {
    this.#ttlMs = ttlMs;
    this.#entries = new LRUCache({ max: maxEntries });
    this.#keep = keep;
  }

  /** Whether get would start no load: the key has a fresh entry, or its load is already under way. */
  has(key: string): boolean {
    if (this.#loading.has(key)) return true;
    const entry = this.#entries.peek(key);
    return entry !== undefined && entry.expires > Date.now();
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
    if (this.#ttlMs <= 0 || !this.#keep(value)) return;
    this.#entries.set(key, { value, expires: Date.now() + this.#ttlMs });
  }
}
