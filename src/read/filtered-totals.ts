import { LRUCache } from 'lru-cache';

/** A filtered list's total as counted at a version of its row_counts row (migration 007). */
export interface CountedTotal {
  /** row_counts.version when it was counted, as text (bigint). */
  version: string;
  total: number;
}

/**
 * The totals of filtered lists that this process counted, so that the next page of the same filter
 * (a client walking GET /v1/customers?modified_from=...) does not count a million rows again. Entries
 * are only ever used by the page statement itself, which checks the version in the same snapshot as
 * the page: a stale entry costs a recount, never a wrong total. Bounded: past maxEntries the least
 * recently used entry goes.
 */
export class FilteredTotals {
  readonly #entries: LRUCache<string, CountedTotal>;

  constructor(maxEntries = 10_000) {
    this.#entries = new LRUCache({ max: maxEntries });
  }

  /** The key of a tenant's list under a set of filters (sort, page and limit do not change a count). */
  static key(tenantId: number, list: string, filters: Readonly<Record<string, unknown>>): string {
    return JSON.stringify([
      tenantId,
      list,
      ...Object.keys(filters)
        .sort()
        .map((name) => [name, filters[name]]),
    ]);
  }

  get(key: string): CountedTotal | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: CountedTotal): void {
    this.#entries.set(key, value);
  }
}
