import { LRUCache } from 'lru-cache';
import {
  type AccessTokenSubject,
  InvalidAccessToken,
  isUnexpired,
  type VerifiedAccessToken,
  verifyAccessToken,
} from './access-token.js';

export interface AccessTokenCacheOptions {
  /** Past this many tokens the least recently used goes. */
  maxEntries?: number;
  /** The longest lifetime (exp - iat) accepted: TOKEN_TTL_SECONDS; by default the largest it may be. */
  maxLifetimeSeconds?: number;
  /** The full check of a token not seen yet; tests count its calls. */
  verify?: (key: Uint8Array, token: string) => Promise<VerifiedAccessToken>;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
}

/**
 * The tokens already verified, so that jose checks a token's signature and claims once rather than on
 * every request (about 5% of the CPU of small reads). Nothing in a verified token can change except
 * the clock, so a hit is checked for expiry only, by jose's own rule. Only valid tokens are kept, so
 * junk cannot fill it, and at most maxEntries of them. Entries are tied to the key they were verified
 * with: given other key bytes, the cache starts over. Revocation is not this cache's concern: the
 * guard still asks the client and key verifiers on every request.
 */
export class AccessTokenCache {
  readonly #entries: LRUCache<string, VerifiedAccessToken>;
  readonly #verify: (key: Uint8Array, token: string) => Promise<VerifiedAccessToken>;
  readonly #now: () => number;
  /** A copy of the key the entries were verified with: the caller's bytes could change in place. */
  #key: Buffer | undefined;

  constructor(options: AccessTokenCacheOptions = {}) {
    this.#entries = new LRUCache({ max: options.maxEntries ?? 10_000 });
    const maxLifetime = options.maxLifetimeSeconds;
    this.#verify = options.verify ?? ((key, token) => verifyAccessToken(key, token, maxLifetime));
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The subject of a valid token; throws InvalidAccessToken as verifyAccessToken does. */
  async verify(key: Uint8Array, token: string): Promise<AccessTokenSubject> {
    this.#useKey(key);
    const cached = this.#entries.get(token);
    if (cached) {
      if (isUnexpired(cached.expiresAt, this.#now())) return cached.subject;
      this.#entries.delete(token);
      // What jose would answer: the token passed every other check, none of which depends on time.
      throw new InvalidAccessToken('The access token expired');
    }
    const verified = await this.#verify(key, token);
    // Checked again after the wait: had the key changed meanwhile, the entry would outlive it.
    if (this.#key?.equals(key)) this.#entries.set(token, verified);
    return verified.subject;
  }

  #useKey(key: Uint8Array): void {
    if (this.#key?.equals(key)) return;
    this.#entries.clear();
    this.#key = Buffer.from(key);
  }
}
