import type { Database } from './database.js';

/**
 * The database of the settings: PostgreSQL when DATABASE_URL is set, else embedded PGlite under
 * DATA_DIR (held under its lock file until closed). Each engine's driver is loaded only when chosen:
 * `pg` costs the embedded default about 5 MB of resident memory it would never use, and PGlite's
 * module the PostgreSQL deployments likewise.
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
    const { openPostgres } = await import('./postgres.js');
    return openPostgres({
      connectionString: config.databaseUrl,
      poolSize: config.poolSize,
      statementTimeoutMs: config.statementTimeoutMs,
      onPoolError,
    });
  }
  const { openPglite } = await import('./pglite.js');
  return openPglite(config.dataDir);
}
