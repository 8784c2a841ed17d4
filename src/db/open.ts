import type { Config } from '../config.js';
import type { Database } from './database.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'poolSize'>,
  onPoolError?: (error: Error) => void,
): Promise<Database> {
  if (config.databaseUrl) {
    return openPostgres({ connectionString: config.databaseUrl, poolSize: config.poolSize, onPoolError });
  }
  return openPglite(config.dataDir);
}
