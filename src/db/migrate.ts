import { readdir, readFile } from 'node:fs/promises';
import type { Database } from './database.js';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** Any fixed number: every instance takes the same transaction-scoped advisory lock. */
const MIGRATION_LOCK = 7_302_215_001;

export interface MigrationResult {
  applied: string[];
}

/**
 * Applies the SQL files of migrations/ in name order, each once, recorded in schema_migrations.
 * All of it runs in one transaction under an advisory lock, so instances starting together apply each
 * migration exactly once and a failed migration leaves the schema as it was.
 */
export async function migrate(db: Database): Promise<MigrationResult> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql')).sort();
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const done = new Set(
      (await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).map((row) => row.name),
    );
    const applied: string[] = [];
    for (const name of files) {
      if (done.has(name)) continue;
      await tx.exec(await readFile(new URL(name, MIGRATIONS_DIR), 'utf8'));
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
      applied.push(name);
    }
    return { applied };
  });
}
