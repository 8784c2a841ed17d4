import { randomUUID } from 'node:crypto';
import { after } from 'node:test';
import type { Database, Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import { insertTenant, tenantIdOf } from '../../src/sql/tenants.js';

export interface Backend {
  readonly name: 'pglite' | 'postgres';
  /** The migrated database, opened on first use and closed after the test file. */
  db(): Promise<Database>;
}

function lazy(name: Backend['name'], open: () => Promise<Database>): Backend {
  let opened: Promise<Database> | undefined;
  after(async () => {
    if (opened) await (await opened).close();
  });
  return {
    name,
    db() {
      opened ??= open().then(async (db) => {
        await migrate(db);
        return db;
      });
      return opened;
    },
  };
}

/**
 * The backends every integration suite runs on: embedded PGlite always, PostgreSQL too when
 * TEST_DATABASE_URL is set (.ci/run sets it). Suites loop over them: same tests, same SQL.
 */
export function backends(): Backend[] {
  const list = [lazy('pglite', () => openPglite(undefined))];
  const url = process.env.TEST_DATABASE_URL;
  if (url) list.push(lazy('postgres', async () => openPostgres({ connectionString: url, poolSize: 4 })));
  return list;
}

/**
 * The id of the tenant with this name, made (without credentials) when there is none: a bare tenant
 * to own rows, for suites that reuse one name across runs on the same PostgreSQL.
 */
export async function ensureTenant(db: Queryable, name: string): Promise<number> {
  return (await insertTenant(db, name)) ?? (await tenantIdOf(db, name))!;
}

/** A tenant of its own for each test: tests never see each other's rows, with no cleanup needed. */
export function newTenant(db: Database): Promise<number> {
  return ensureTenant(db, `test-${randomUUID()}`);
}
