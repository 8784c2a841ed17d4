/**
 * A small in-memory cache whose entries expire after a fixed time. Concurrent misses of one key share
 * one load. Bounded: past maxEntries the oldest entry goes, so junk keys cannot grow it without limit.
 */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expires: number }>();
  readonly #loading = new Map<string, Promise<V>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.#ttlMs = ttlMs;
    this.#maxEntries = maxEntries;
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
    this.#entries.delete(key);
    this.#entries.set(key, { value, expires: Date.now() + this.#ttlMs });
    if (this.#entries.size > this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }
}
