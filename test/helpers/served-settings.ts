import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';

export type ServedBackend = 'pglite' | 'postgres';

/** The backends a served process starts on: embedded PGlite always, PostgreSQL with TEST_DATABASE_URL. */
export const servedBackends: readonly ServedBackend[] = [
  'pglite',
  ...(process.env.TEST_DATABASE_URL ? ['postgres' as const] : []),
];

/**
 * The settings (environment) of a new, empty database for a served process: a DATA_DIR of its own,
 * or a scratch database on the TEST_DATABASE_URL server. Removed after the test file.
 */
export async function newDatabaseSettings(backend: ServedBackend): Promise<Record<string, string>> {
  if (backend === 'pglite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'sfa-served-'));
    after(() => rmSync(dataDir, { recursive: true, force: true }));
    return { DATA_DIR: dataDir };
  }
  const scratch = await scratchPostgresDatabase(process.env.TEST_DATABASE_URL!);
  after(() => scratch.drop());
  return { DATABASE_URL: scratch.url };
}
