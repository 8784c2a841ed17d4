import type { Queryable } from '../db/database.js';
import { subscriptionKeyId, subscriptionKeyMatches } from './subscription-key.js';
import { TtlCache } from './ttl-cache.js';

interface StoredKey {
  tenantId: number;
  keyHash: string;
  revoked: boolean;
}

/**
 * Checks subscription keys on every request. The stored row of a key id is cached for a short time
 * (unknown ids too), so most requests cost an HMAC and no query; the hash is compared on every request.
 * A revocation therefore reaches a running server within cacheMs.
 */
export class SubscriptionKeyVerifier {
  readonly #db: Queryable;
  readonly #hashingSecret: () => Promise<Uint8Array>;
  readonly #cache: TtlCache<StoredKey | null>;

  constructor(db: Queryable, hashingSecret: () => Promise<Uint8Array>, cacheMs: number) {
    this.#db = db;
    this.#hashingSecret = hashingSecret;
    this.#cache = new TtlCache(cacheMs);
  }

  /** The tenant of a valid key that is not revoked; undefined for any other value. */
  async tenantOf(key: string): Promise<number | undefined> {
    const keyId = subscriptionKeyId(key);
    if (keyId === undefined) return undefined;
    const stored = await this.#cache.get(keyId, () => this.#load(keyId));
    if (stored === null || stored.revoked) return undefined;
    return subscriptionKeyMatches(await this.#hashingSecret(), key, stored.keyHash)
      ? stored.tenantId
      : undefined;
  }

  async #load(keyId: string): Promise<StoredKey | null> {
    const [row] = await this.#db.query<StoredKey>(
      `SELECT tenant_id AS "tenantId", key_hash AS "keyHash", revoked_at IS NOT NULL AS revoked
       FROM subscription_keys WHERE key_id = $1`,
      [keyId],
    );
    return row ?? null;
  }
}
