import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { signAccessToken } from '../../auth/access-token.js';
import { callerAddress } from '../../auth/caller-address.js';
import type { ApiClientVerifier } from '../../auth/client-verifier.js';
import type { Attempt, FailureThrottle } from '../../auth/failure-throttle.js';
import { HashingBusy } from '../../auth/hashing-gate.js';
import type { SubscriptionKeyVerifier } from '../../auth/key-verifier.js';
import { isConnectionError } from '../../db/failures.js';
import { HttpProblem, OAuthProblem, oauthProblems } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import { logDatabaseUnavailable } from '../../http/unavailable-log.js';
import { readTokenRequest } from './token-route-request.js';
import { GRANT_TYPE, GRANT_TYPE_REQUIRED, tokenRoute } from './token-schema.js';

export interface TokenRouteDeps {
  clients: ApiClientVerifier;
  keys: SubscriptionKeyVerifier;
  signingKey: () => Promise<Uint8Array>;
  tokenTtlSeconds: number;
  /**
   * Failed client authentications per remote address and per client id at an address, both refusing
   * before any hash; and per client id from anywhere, which never refuses a right secret (a client id
   * is not secret: anyone could otherwise lock its client out) but answers a wrong one 429.
   */
  throttles: { address: FailureThrottle; clientAtAddress: FailureThrottle; client: FailureThrottle };
}

/** A token request is a few hundred bytes. */
const BODY_LIMIT = 16 * 1024;

/** Client ids are not secret; anything else typed into client_id might be, and stays out of the log. */
const loggable = (clientId: string) => (/^cl_[0-9a-f]{16}$/.test(clientId) ? clientId : '(malformed)');

/**
 * POST /token, the OAuth 2.0 client credentials grant (RFC 6749 4.4). An encapsulated plugin: the form
 * parser and the OAuth error bodies apply to this route only; the batch routes keep JSON only.
 * Request bodies are never logged here: they hold client secrets.
 */
export function tokenRoutes(deps: TokenRouteDeps): FastifyPluginAsync {
  return async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_request, body, done) => done(null, new URLSearchParams(body as string)),
    );
    // RFC 6749 5.1: tokens, and answers about credentials, are never cached.
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      reply.header('pragma', 'no-cache');
    });
    scope.setErrorHandler((error: FastifyError, request, reply) => {
      let problem: OAuthProblem | undefined = error instanceof OAuthProblem ? error : undefined;
      const status = error instanceof HttpProblem ? error.statusCode : (error.statusCode ?? 500);
      if (!problem && status >= 400 && status < 500) {
        const description =
          error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
            ? 'Content-Type must be application/x-www-form-urlencoded or application/json'
            : error instanceof HttpProblem
              ? String((error.errors[0] as { message?: unknown } | undefined)?.message ?? 'Invalid request')
              : error.message;
        problem = oauthProblems.invalidRequest(description, status === 413 ? 413 : 400);
      }
      // The database out of reach: RFC 6749's "come back" (docs/decisions/0143-come-back-answers.md).
      if (!problem && isConnectionError(error)) {
        logDatabaseUnavailable(request.log, error);
        problem = oauthProblems.databaseUnavailable();
      }
      // Anything else is the service's own failure: the parent handler logs it and answers 500.
      if (!problem) throw error;
      return reply.code(problem.statusCode).headers(problem.headers).send(problem.body());
    });

    // The body is checked by the handler: its refusals are RFC 6749's, one at a time, in their order.
    const route = { bodyLimit: BODY_LIMIT, schema: tokenRoute.schema, validatorCompiler: checkedByHandler };
    scope.post(tokenRoute.url, route, async (request, reply) => {
      const asked = readTokenRequest(request.body, request.headers.authorization);
      if (asked.grantType === undefined) {
        throw oauthProblems.invalidRequest(GRANT_TYPE_REQUIRED);
      }
      if (asked.grantType !== GRANT_TYPE) throw oauthProblems.unsupportedGrantType();
      const { clientId, clientSecret, viaBasic } = asked;
      if (clientId === undefined || clientSecret === undefined) {
        throw oauthProblems.invalidClient(
          'Client authentication required: client_id and client_secret in the body, or HTTP Basic',
          viaBasic,
        );
      }

      // Bounded: a client id is short, and a long one must not make the throttle hold long strings.
      const client = clientId.slice(0, 100);
      const caller = callerAddress(request.ip);
      const addressKey = `address:${caller}`;
      const clientAtAddressKey = `client:${client} address:${caller}`;
      const clientKey = `client:${client}`;
      // Slots are taken before the hash, so attempts in flight count: a burst cannot pass all at once.
      const attempts: Attempt[] = [];
      for (const [throttle, key] of [
        [deps.throttles.address, addressKey],
        [deps.throttles.clientAtAddress, clientAtAddressKey],
      ] as const) {
        const attempt = throttle.reserve(key);
        if (attempt === undefined) {
          for (const taken of attempts) taken.release();
          request.log.warn({ clientId: loggable(clientId) }, 'token request throttled');
          throw oauthProblems.tooManyFailures(throttle.retryAfterSeconds(key));
        }
        attempts.push(attempt);
      }
      const refuse = (description: string) => {
        for (const attempt of attempts) attempt.failed();
        // Past the client's limit a wrong secret is told to slow down; a right one still gets its token.
        const wait = deps.throttles.client.retryAfterSeconds(clientKey);
        deps.throttles.client.recordFailure(clientKey);
        request.log.warn({ clientId: loggable(clientId), reason: description }, 'token refused');
        return wait > 0
          ? oauthProblems.tooManyFailures(wait)
          : oauthProblems.invalidClient(description, viaBasic);
      };

      let tenantId: number | undefined;
      try {
        tenantId = await deps.clients.authenticate(clientId, clientSecret, caller);
        if (tenantId === undefined) throw refuse('Client authentication failed');
        const key = request.headers['subscription-key'];
        if (key !== undefined) {
          const keyTenant = typeof key === 'string' ? await deps.keys.tenantOf(key) : undefined;
          if (keyTenant === undefined) throw refuse('Invalid or revoked subscription key');
          if (keyTenant !== tenantId) throw refuse('The subscription key belongs to another tenant');
        }
      } catch (error) {
        if (!(error instanceof HashingBusy)) throw error;
        // Nothing was checked: the slots go back (finally), and the client is asked to come back soon.
        request.log.warn({ clientId: loggable(clientId) }, 'token request refused: hashing busy');
        throw oauthProblems.hashingBusy(error.retryAfterSeconds);
      } finally {
        // A slot not counted as a failure above (success, busy, a database error) is freed.
        for (const attempt of attempts) attempt.release();
      }
      deps.throttles.clientAtAddress.reset(clientAtAddressKey);
      const ttl = deps.tokenTtlSeconds;
      const accessToken = await signAccessToken(await deps.signingKey(), { clientId, tenantId }, ttl);
      request.log.info({ clientId, tenantId }, 'access token issued');
      return reply.code(200).send({ access_token: accessToken, token_type: 'Bearer', expires_in: ttl });
    });
  };
}
