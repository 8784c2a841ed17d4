import type { Database } from './database.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

/**
 * The database of the settings: PostgreSQL when DATABASE_URL is set, else embedded PGlite under
 * DATA_DIR (held under its lock file until closed).
 */
export async function openDatabase(
  config: {
    databaseUrl?: string | undefined;
    dataDir: string;
    poolSize: number;
    statementTimeoutMs?: number;
  },
  onPoolError?: (error: Error) => void,
): Promise<Database> {
  if (config.databaseUrl) {
    return openPostgres({
      connectionString: config.databaseUrl,
      poolSize: config.poolSize,
      statementTimeoutMs: config.statementTimeoutMs,
      onPoolError,
    });
  }
  return openPglite(config.dataDir);
}
