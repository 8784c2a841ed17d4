import type { onRequestHookHandler } from 'fastify';
import { type AccessTokenSubject, InvalidAccessToken } from '../auth/access-token.js';
import type { ApiClientVerifier } from '../auth/client-verifier.js';
import type { Attempt, FailureThrottle } from '../auth/failure-throttle.js';
import type { SubscriptionKeyVerifier } from '../auth/key-verifier.js';
import { subscriptionKeyId } from '../auth/subscription-key.js';
import { AccessTokenCache } from '../auth/token-cache.js';
import { problems } from './problems.js';
import type { RateLimiter } from './rate-limit.js';

export interface GuardDeps {
  keys: SubscriptionKeyVerifier;
  clients: ApiClientVerifier;
  signingKey: () => Promise<Uint8Array>;
  /** Counts the request against its subscription key once it is authenticated; none: no limit. */
  rateLimiter?: RateLimiter | undefined;
  /** The longest token lifetime accepted (TOKEN_TTL_SECONDS), for the guard's own token cache. */
  tokenTtlSeconds?: number;
  /**
   * Subscription keys looked up in the database and not found valid, per tenant of the token sent
   * with them: past the limit, a key that would need a lookup gets 429 (keys already cached still pass).
   */
  keyFailures?: FailureThrottle | undefined;
  /** The tokens already verified; by default one of the guard's own. */
  tokens?: AccessTokenCache;
}

/** RFC 6750 2.1 b64token. */
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * The guard of every /api and /v1 route (extensions.md 2), an onRequest hook so that no body is read
 * before it: a valid, unrevoked Subscription-Key and a valid Bearer token of an unrevoked client, both
 * of one tenant, which becomes request.tenantId. Anything else is a 401. An authenticated request is
 * then counted against the rate limit of its key (429 past it).
 */
export function createGuard(deps: GuardDeps): onRequestHookHandler {
  const tokens = deps.tokens ?? new AccessTokenCache({ maxLifetimeSeconds: deps.tokenTtlSeconds });
  return async (request, reply) => {
    const key = request.headers['subscription-key'];
    if (typeof key !== 'string' || key === '') throw problems.missingSubscriptionKey();
    const authorization = request.headers.authorization ?? '';
    if (!/^Bearer( |$)/i.test(authorization)) throw problems.missingAccessToken();
    const token = BEARER.exec(authorization)?.[1];
    if (token === undefined) throw problems.invalidAccessToken('The access token is invalid');

    let subject: AccessTokenSubject;
    try {
      // Cached once verified; the client's and key's standing below are still checked every time.
      subject = await tokens.verify(await deps.signingKey(), token);
    } catch (error) {
      if (error instanceof InvalidAccessToken) throw problems.invalidAccessToken(error.message);
      throw error;
    }
    // Only a valid token gets this far, so its tenant answers for the lookups of unknown keys: random
    // key ids would otherwise each cost a query. A slot is taken before the lookup, so a burst counts.
    const failuresKey = `tenant:${subject.tenantId}`;
    let lookup: Attempt | undefined;
    if (deps.keyFailures && deps.keys.needsLookup(key)) {
      lookup = deps.keyFailures.reserve(failuresKey);
      if (lookup === undefined) {
        throw problems.tooManyKeyFailures(deps.keyFailures.retryAfterSeconds(failuresKey));
      }
    }
    let keyTenant: number | undefined;
    let clientTenant: number | undefined;
    try {
      [keyTenant, clientTenant] = await Promise.all([
        deps.keys.tenantOf(key),
        deps.clients.activeTenantOf(subject.clientId),
      ]);
      if (keyTenant === undefined) lookup?.failed();
    } finally {
      lookup?.release();
    }
    if (keyTenant === undefined) throw problems.invalidSubscriptionKey();
    if (clientTenant !== subject.tenantId) throw problems.invalidAccessToken('The access token was revoked');
    if (keyTenant !== subject.tenantId) throw problems.credentialsOfDifferentTenants();
    request.tenantId = keyTenant;
    if (deps.rateLimiter) await deps.rateLimiter.check(subscriptionKeyId(key)!, reply);
  };
}
