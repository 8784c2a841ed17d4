import type { Queryable } from '../db/database.js';
import { apiClientById, type StoredApiClient } from '../sql/credentials.js';
import { clientSecretMatches, decoyClientSecretHash } from './client-secret.js';
import { type HashingGate, secretHashing } from './hashing-gate.js';
import { TtlCache } from './ttl-cache.js';

const CLIENT_ID_MAX = 64;

/** Checks API clients: their secret when a token is asked for, their standing on every request. */
export class ApiClientVerifier {
  readonly #db: Queryable;
  readonly #standing: TtlCache<{ tenantId: number; revoked: boolean } | null>;
  readonly #hashing: HashingGate;
  /** Secrets hashed to be checked (the metric sfa_client_secret_hashes_total). */
  hashed = 0;

  constructor(db: Queryable, cacheMs: number, hashing: HashingGate = secretHashing) {
    this.#db = db;
    this.#standing = new TtlCache(cacheMs);
    this.#hashing = hashing;
  }

  /**
   * The tenant of the client when the secret is right and the client is not revoked. An unknown or
   * revoked client costs the same scrypt as a known one, so timing does not tell which ids exist.
   * The hash waits its turn at the process's hashing gate, where `caller` (the remote address) holds
   * a bounded share of the places; throws HashingBusy when there is none for it.
   */
  async authenticate(clientId: string, secret: string, caller: string): Promise<number | undefined> {
    const stored = clientId.length <= CLIENT_ID_MAX ? await this.#load(clientId) : undefined;
    const hash = stored?.secretHash ?? (await decoyClientSecretHash());
    const matches = await this.#hashing.run(caller, () => {
      this.hashed++;
      return clientSecretMatches(secret, hash);
    });
    return matches && stored && !stored.revoked ? stored.tenantId : undefined;
  }

  /** The tenant of a client that is not revoked (cached for a short time); undefined otherwise. */
  async activeTenantOf(clientId: string): Promise<number | undefined> {
    if (clientId.length > CLIENT_ID_MAX) return undefined;
    const standing = await this.#standing.get(clientId, async () => {
      const stored = await this.#load(clientId);
      return stored ? { tenantId: stored.tenantId, revoked: stored.revoked } : null;
    });
    return standing && !standing.revoked ? standing.tenantId : undefined;
  }

  #load(clientId: string): Promise<StoredApiClient | undefined> {
    return apiClientById(this.#db, clientId);
  }
}
