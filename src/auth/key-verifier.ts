import { LRUCache } from 'lru-cache';
import type { Queryable } from '../db/database.js';
import { type StoredSubscriptionKey, subscriptionKeyById } from '../sql/credentials.js';
import { subscriptionKeyId, subscriptionKeyMatches } from './subscription-key.js';
import { TtlCache } from './ttl-cache.js';

/**
 * Checks subscription keys on every request. The stored row of a key id is cached for a short time,
 * so most requests cost an HMAC and no query; the hash is compared on every request. A revocation
 * therefore reaches a running server within cacheMs. Ids with no row are remembered as long, in a
 * cache of their own: a stream of random ids churns that one and never pushes real keys out.
 */
export class SubscriptionKeyVerifier {
  readonly #db: Queryable;
  readonly #hashingSecret: () => Promise<Uint8Array>;
  readonly #known: TtlCache<StoredSubscriptionKey | null>;
  readonly #unknown: LRUCache<string, true>;
  readonly #cacheMs: number;
  /** Rows read from the database (the metric sfa_subscription_key_lookups_total). */
  lookups = 0;

  constructor(db: Queryable, hashingSecret: () => Promise<Uint8Array>, cacheMs: number) {
    this.#db = db;
    this.#hashingSecret = hashingSecret;
    this.#cacheMs = cacheMs;
    this.#known = new TtlCache(cacheMs, 10_000, (stored) => stored !== null);
    this.#unknown = new LRUCache({ max: 10_000, ttl: Math.max(1, cacheMs), ttlAutopurge: false });
  }

  /**
   * Whether checking this key would read the database: a well-formed key whose id is in no cache and
   * not being read already (a burst of one key costs one lookup, and is counted once).
   */
  needsLookup(key: string): boolean {
    const keyId = subscriptionKeyId(key);
    return keyId !== undefined && !this.#known.has(keyId) && !this.#unknown.has(keyId);
  }

  /** The tenant of a valid key that is not revoked; undefined for any other value. */
  async tenantOf(key: string): Promise<number | undefined> {
    const keyId = subscriptionKeyId(key);
    if (keyId === undefined || this.#unknown.has(keyId)) return undefined;
    const stored = await this.#known.get(keyId, () => this.#load(keyId));
    if (stored === null || stored.revoked) return undefined;
    return subscriptionKeyMatches(await this.#hashingSecret(), key, stored.keyHash)
      ? stored.tenantId
      : undefined;
  }

  async #load(keyId: string): Promise<StoredSubscriptionKey | null> {
    this.lookups++;
    const row = await subscriptionKeyById(this.#db, keyId);
    if (row === undefined && this.#cacheMs > 0) this.#unknown.set(keyId, true);
    return row ?? null;
  }
}
