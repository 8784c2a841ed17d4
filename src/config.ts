import { resolve } from 'node:path';
import { DEFAULT_ADMISSION } from './admission/admission-limits.js';
import { TAKEOVER_LEASE_SECONDS } from './background/lease-timing.js';
import { ConnectionUrlError, parseConnectionTargets } from './db/connection-url.js';
import { type Network, parseNetworks } from './webhooks/addresses.js';

/** Settings of the server and of the command line, read once from the environment. */
export interface Config {
  /** postgres://... selects PostgreSQL; absent selects embedded PGlite under dataDir. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly port: number;
  readonly host: string;
  readonly logLevel: string;
  /** Signing secret for access tokens; when absent one is generated and kept in the database. */
  readonly tokenSecret: string | undefined;
  readonly tokenTtlSeconds: number;
  /** Size of the PostgreSQL connection pool. */
  readonly poolSize: number;
  /**
   * Longest a PostgreSQL statement may run (DB_STATEMENT_TIMEOUT_MS): set per transaction on the
   * server and enforced by the client on every query, so it holds behind PgBouncer too.
   */
  readonly statementTimeoutMs: number;
  /** Requests per subscription key and minute (RATE_LIMIT_PER_MINUTE); 0 turns the limit off. */
  readonly rateLimitPerMinute: number;
  /**
   * Batches parsed, validated and written at once in this process (BATCH_CONCURRENCY); small ones may
   * fill more places while no large one waits (src/admission/batch-admission.ts, admissionFor).
   */
  readonly batchConcurrency: number;
  /** Of them, batches of one tenant (BATCH_CONCURRENCY_PER_TENANT). */
  readonly batchConcurrencyPerTenant: number;
  /** Batches of one tenant waiting for a place before more are refused with 429 (BATCH_QUEUE_PER_TENANT). */
  readonly batchQueuePerTenant: number;
  /** Bytes of batch bodies held at once by the process before more are refused with 503 (BATCH_BODIES_MAX_MB). */
  readonly batchBodiesMaxBytes: number;
  /** Port of the separate GET /metrics listener (0: any free port); absent: no metrics listener. */
  readonly metricsPort: number | undefined;
  /** Interface of the metrics listener. */
  readonly metricsHost: string;
  /**
   * Which proxies' X-Forwarded-For/-Proto/-Host to believe (Fastify's trustProxy): false (default),
   * true (any), a hop count, or a comma-separated list of addresses or CIDR ranges.
   */
  readonly trustProxy: boolean | number | string;
  /**
   * PUBLIC_BASE_URL: the scheme, host and path prefix clients reach the service at
   * (https://api.example.com/backoffice), without a final slash; paging links start with it.
   */
  readonly publicBaseUrl: string | undefined;
  /** How long an Idempotency-Key's answer is kept (IDEMPOTENCY_TTL_SECONDS; extensions.md 8: at least 7 days). */
  readonly idempotencyTtlSeconds: number;
  /**
   * FEED_STALL_WARN_SECONDS: a transaction holding an xid this long, anywhere on the database server,
   * gets a warning in the log: it holds back every tenant's change feed (src/feed/stall-watch.ts).
   */
  readonly feedStallWarnSeconds: number;
  /**
   * WEBHOOK_ALLOWED_NETWORKS: comma-separated CIDR ranges that webhook deliveries may reach besides
   * public addresses (ERPs inside the operator's own network); plain http:// only to these.
   */
  readonly webhookAllowedNetworks: readonly Network[];
  /**
   * JOB_LEASE_SECONDS: how long a running bulk job is held by its instance without renewal (renewed
   * every third of it while the job runs): how soon another instance takes over the job of one that
   * was killed. Default 8, so that it is within 10 s (extensions.md 12,
   * docs/decisions/0141-leases-within-ten-seconds.md); a longer one delays the takeover as much.
   */
  readonly jobLeaseSeconds: number;
  /** CONSOLE: `on` (default) serves the integrator's console at /console; `off` removes it (the API stays). */
  readonly console: boolean;
}

/** FEED_STALL_WARN_SECONDS when unset. */
export const DEFAULT_FEED_STALL_WARN_SECONDS = 60;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function trustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (/^[0-9a-fA-F.:/, ]+$/.test(raw)) return raw;
  throw new ConfigError(
    `TRUST_PROXY must be true, false, a hop count, or addresses/CIDR ranges separated by commas, got "${raw}"`,
  );
}

/** An absolute http(s) URL without credentials, query or fragment; kept without its final slash. */
function publicBaseUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  const refuse = () =>
    new ConfigError(
      `PUBLIC_BASE_URL must be an absolute http:// or https:// URL without query or fragment, got "${raw}"`,
    );
  if (!/^https?:\/\/[^/?#]/i.test(raw) || /[?#\s]/.test(raw)) throw refuse();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse();
  }
  // Not echoed: the value holds a password.
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError('PUBLIC_BASE_URL must not carry a user name or password');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'off') return raw === 'on';
  throw new ConfigError(`${name} must be on or off, got "${raw}"`);
}

function allowedNetworks(raw: string | undefined): Network[] {
  try {
    return parseNetworks(raw);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  if (databaseUrl !== undefined) {
    // The multi-host form and target_session_attrs are checked now, not at the first connection
    // (decision 0144).
    try {
      parseConnectionTargets(databaseUrl);
    } catch (error) {
      if (error instanceof ConnectionUrlError) throw new ConfigError(error.message);
      throw error;
    }
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const tokenSecret = env.TOKEN_SECRET || undefined;
  if (tokenSecret !== undefined && Buffer.byteLength(tokenSecret) < 32) {
    throw new ConfigError('TOKEN_SECRET must be at least 32 bytes long');
  }
  return Object.freeze({
    databaseUrl,
    dataDir: resolve(env.DATA_DIR || './data'),
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    logLevel,
    tokenSecret,
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 3600, 60, 86400),
    idempotencyTtlSeconds: integer(env, 'IDEMPOTENCY_TTL_SECONDS', 7 * 86400, 7 * 86400, 366 * 86400),
    feedStallWarnSeconds: integer(env, 'FEED_STALL_WARN_SECONDS', DEFAULT_FEED_STALL_WARN_SECONDS, 1, 86400),
    poolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 200),
    statementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 60_000, 100, 3_600_000),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 1200, 0, 1_000_000),
    batchConcurrency: integer(env, 'BATCH_CONCURRENCY', DEFAULT_ADMISSION.running, 1, 64),
    batchConcurrencyPerTenant: integer(
      env,
      'BATCH_CONCURRENCY_PER_TENANT',
      DEFAULT_ADMISSION.runningPerTenant,
      1,
      64,
    ),
    batchQueuePerTenant: integer(env, 'BATCH_QUEUE_PER_TENANT', DEFAULT_ADMISSION.waitingPerTenant, 0, 1000),
    batchBodiesMaxBytes:
      integer(env, 'BATCH_BODIES_MAX_MB', DEFAULT_ADMISSION.heldBytes / 1024 / 1024, 64, 65_536) *
      1024 *
      1024,
    metricsPort: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    trustProxy: trustProxy(env.TRUST_PROXY),
    publicBaseUrl: publicBaseUrl(env.PUBLIC_BASE_URL),
    webhookAllowedNetworks: allowedNetworks(env.WEBHOOK_ALLOWED_NETWORKS),
    jobLeaseSeconds: integer(env, 'JOB_LEASE_SECONDS', TAKEOVER_LEASE_SECONDS, 5, 3600),
    console: onOff(env, 'CONSOLE', true),
  });
}
