/**
 * Runs work one at a time per key, in arrival order; work of different keys runs side by side. A
 * failure ends only its own turn. Keys with nothing running or waiting are forgotten.
 */
export class OneAtATime<K> {
  readonly #tails = new Map<K, Promise<unknown>>();

  async run<T>(key: K, work: () => Promise<T>): Promise<T> {
    const turn = (this.#tails.get(key) ?? Promise.resolve()).then(work, work);
    const settled = turn.catch(() => {});
    this.#tails.set(key, settled);
    try {
      return await turn;
    } finally {
      if (this.#tails.get(key) === settled) this.#tails.delete(key);
    }
  }

  /** Keys with work running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
