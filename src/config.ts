import { resolve } from 'node:path';

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
}

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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
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
    poolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 200),
  });
}
