import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { ApiClientVerifier } from '../../auth/client-verifier.js';
import { FailureThrottle } from '../../auth/failure-throttle.js';
import { SubscriptionKeyVerifier } from '../../auth/key-verifier.js';
import { once, serverSecret, tokenSigningKey } from '../../auth/server-secrets.js';
import type { Database } from '../../db/database.js';
import { createGuard } from '../../http/guard-hook.js';
import { rateLimiterFor, type WindowClock } from '../../http/rate-limit.js';
import { tokenRoutes } from './token-route.js';

export interface AuthDeps {
  db: Database;
  /** rateLimitPerMinute absent or 0: no rate limit. */
  config: { tokenSecret: string | undefined; tokenTtlSeconds: number; rateLimitPerMinute?: number };
  /** The app's metrics registry, to which the authentication's own counters are added. */
  metrics?: { registry: Registry } | undefined;
  /** The clock rate limit windows are counted on (tests); by default the database's, or this process's. */
  rateLimitClock?: WindowClock | undefined;
}

export interface Auth {
  /** The guard of every /api and /v1 route: an onRequest hook that sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** POST /token, to register as an encapsulated plugin. */
  tokenRoutes: FastifyPluginAsync;
}

/** How long a running server trusts what it read about a key or a client: the delay of a revocation. */
const CREDENTIAL_CACHE_MS = 30_000;

/** The authentication of one app: its guard and its token endpoint, sharing caches and secrets. */
export function createAuth({ db, config, metrics, rateLimitClock }: AuthDeps): Auth {
  // Loaded on first use, not at build time: /health answers even before the database does.
  const signingKey = once(() => tokenSigningKey(db, config));
  const keys = new SubscriptionKeyVerifier(
    db,
    once(() => serverSecret(db, 'key_hashing')),
    CREDENTIAL_CACHE_MS,
  );
  const clients = new ApiClientVerifier(db, CREDENTIAL_CACHE_MS);
  if (metrics) {
    countFrom(
      metrics.registry,
      'sfa_client_secret_hashes_total',
      'Client secrets hashed at POST /token',
      () => clients.hashed,
    );
    countFrom(
      metrics.registry,
      'sfa_subscription_key_lookups_total',
      'Subscription key rows read from the database (cache misses)',
      () => keys.lookups,
    );
  }
  return {
    authenticate: createGuard({
      keys,
      clients,
      signingKey,
      tokenTtlSeconds: config.tokenTtlSeconds,
      keyFailures: new FailureThrottle({ limit: 20, windowMs: 60_000 }),
      rateLimiter: rateLimiterFor(db, config.rateLimitPerMinute, rateLimitClock),
    }),
    tokenRoutes: tokenRoutes({
      clients,
      keys,
      signingKey,
      tokenTtlSeconds: config.tokenTtlSeconds,
      throttles: {
        address: new FailureThrottle({ limit: 20, windowMs: 60_000 }),
        clientAtAddress: new FailureThrottle({ limit: 5, windowMs: 60_000 }),
        client: new FailureThrottle({ limit: 5, windowMs: 60_000 }),
      },
    }),
  };
}

/** A Prometheus counter read from a running count when scraped. */
function countFrom(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}
