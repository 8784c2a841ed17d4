import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { describe, test } from 'node:test';
import pg from 'pg';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import type { Database, Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import { type Backend, backends } from '../helpers/backends.js';

/*
 * README: migrations run "inside one transaction under a PostgreSQL advisory lock: instances starting
 * together apply each one once, and a failed migration leaves the schema as it was".
 *
 * migrate() takes no migrations directory of its own, so the real migrations are made to fail: a table
 * named leases, made by the test first, collides with migration 014's CREATE TABLE leases. On every
 * backend, on a new database (001 to 013 run, then 014 fails), migrate() throws and the whole database
 * is as it was:
 * relations, columns, constraints, indexes, functions, triggers, types, every table's rows and the
 * schema_migrations rows (none of the run's files applied, as its one transaction promises); with the
 * table out of the way the same migrations then apply. On PostgreSQL, two instances held at the
 * migration lock by the test and let go at the same moment both succeed and apply each file once
 * (test/db/schema.test.ts starts two at once without lining them up).
 */

const FILES = (await readdir(new URL('../../src/db/migrations/', import.meta.url)))
  .filter((name) => name.endsWith('.sql'))
  .sort();
/** The migration that a table of the test's collides with. */
const _LEASES = '014_leases.sql';
/** Some of the tables that migrations 001 to 013 make, and the table migrate() records them in. */
const MADE_BY_001_TO_013 = [
  'schema_migrations',
  'tenants',
  'products',
  'subscription_keys',
  'customers',
  'row_counts',
  'idempotency_keys',
];
/** src/db/migrate.ts MIGRATION_LOCK: the advisory lock every migrate() takes first. */
const MIGRATION_LOCK = 7_302_215_001;

interface Scratch {
  db: Database;
  dispose(): Promise<void>;
}

/**
 * A new, empty database of the backend. Not backends()' own: that one is migrated already and, on
 * PostgreSQL, shared with the other test files, whose schema this file must not break.
 */
async function emptyDatabase(backend: Backend): Promise<Scratch> {
  if (backend.name === 'pglite') {
    const db = await openPglite(undefined);
    return { db, dispose: () => db.close() };
  }
  const scratch = await scratchPostgresDatabase(process.env.TEST_DATABASE_URL!);
  const db = openPostgres({ connectionString: scratch.url, poolSize: 2 });
  return {
    db,
    async dispose() {
      await db.close();
      await scratch.drop();
    },
  };
}

const USER_SCHEMAS = `n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'`;

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Everything a migration could have changed, read from the catalogs, and every table's rows. */
async function snapshot(db: Queryable) {
  const relations = await db.query<{ schema: string; name: string; kind: string }>(
    `SELECT n.nspname::text AS schema, c.relname::text AS name, c.relkind::text AS kind
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE ${USER_SCHEMAS} ORDER BY 1, 2`,
  );
  const rows: Record<string, { n: number; digest: string | null }> = {};
  for (const table of relations.filter((relation) => relation.kind === 'r')) {
    const name = `${quoted(table.schema)}.${quoted(table.name)}`;
    const [count] = await db.query<{ n: number; digest: string | null }>(
      `SELECT count(*)::int AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM ${name} t`,
    );
    rows[name] = count!;
  }
  const hasMigrations = (await db.query(`SELECT to_regclass('schema_migrations') AS t`))[0]!.t !== null;
  return {
    schemas: await db.query(
      `SELECT n.nspname::text AS name FROM pg_namespace n WHERE ${USER_SCHEMAS} ORDER BY 1`,
    ),
    extensions: await db.query(
      'SELECT extname::text AS name, extversion::text AS version FROM pg_extension ORDER BY 1',
    ),
    relations,
    columns: await db.query(
      `SELECT table_schema::text AS schema, table_name::text AS table, column_name::text AS column,
              ordinal_position::int AS position, data_type::text AS type,
              character_maximum_length::int AS length, numeric_precision::int AS precision,
              numeric_scale::int AS scale, is_nullable::text AS nullable, column_default::text AS default
       FROM information_schema.columns
       WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 4`,
    ),
    constraints: await db.query(
      `SELECT n.nspname::text AS schema, c.conname::text AS name, c.conrelid::regclass::text AS table,
              pg_get_constraintdef(c.oid) AS definition
       FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE ${USER_SCHEMAS} ORDER BY 1, 2, 3`,
    ),
    indexes: await db.query(
      `SELECT schemaname::text AS schema, indexname::text AS name, indexdef AS definition FROM pg_indexes
       WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
    ),
    functions: await db.query(
      `SELECT n.nspname::text AS schema, p.proname::text AS name,
              pg_get_function_identity_arguments(p.oid) AS arguments, md5(p.prosrc) AS body
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_SCHEMAS} ORDER BY 1, 2, 3`,
    ),
    triggers: await db.query(
      `SELECT tgrelid::regclass::text AS table, tgname::text AS name, pg_get_triggerdef(oid) AS definition
       FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`,
    ),
    types: await db.query(
      `SELECT n.nspname::text AS schema, t.typname::text AS name, t.typtype::text AS kind
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE ${USER_SCHEMAS} ORDER BY 1, 2`,
    ),
    rows,
    migrations: hasMigrations
      ? await db.query('SELECT name, applied_at::text AS applied_at FROM schema_migrations ORDER BY name')
      : null,
  };
}

/** migrate() refuses: PostgreSQL's "relation already exists", at migration 014's CREATE TABLE leases. */
async function assertMigrateFailsAtLeases(db: Database): Promise<void> {
  await assert.rejects(migrate(db), (error: { code?: unknown; message?: unknown }) => {
    assert.equal(error.code, '42P07', String(error.message));
    assert.match(String(error.message), /"leases" already exists/);
    return true;
  });
}

/** The table of the test's that migration 014 collides with: not the one 014 makes, and a row in it. */
async function blockLeases(db: Queryable): Promise<void> {
  await db.exec(`CREATE TABLE leases (made_by_the_test integer NOT NULL);
    INSERT INTO leases VALUES (42);`);
}

const recorded = async (db: Queryable) =>
  (
    await db.query<{ name: string; n: number }>(
      'SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name ORDER BY name',
    )
  ).map(({ name, n }) => `${name} x${n}`);

for (const backend of backends()) {
  describe(`a failed migration on ${backend.name} leaves the database as it was`, () => {
    test('a new database: 001 to 013 run, 014 fails; nothing of the run stays, not even schema_migrations', async () => {
      const { db, dispose } = await emptyDatabase(backend);
      try {
        await blockLeases(db);
        const before = await snapshot(db);
        assert.deepEqual(
          before.relations.map((relation) => relation.name),
          ['leases'],
          'the new database holds the test table only',
        );

        await assertMigrateFailsAtLeases(db);

        // What the run made before it failed: none of 001 to 013 stayed, nor a record of them.
        const stayed = await db.query<{ name: string }>(
          `SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL`,
          [MADE_BY_001_TO_013],
        );
        assert.deepEqual(stayed, [], 'tables made by the failed run');
        const [leases] = await db.query<{ columns: string[] }>(
          `SELECT array_agg(column_name::text ORDER BY ordinal_position) AS columns
           FROM information_schema.columns WHERE table_name = 'leases'`,
        );
        assert.deepEqual(leases!.columns, ['made_by_the_test'], 'leases is still the test table');
        // And the whole database is as it was.
        assert.deepEqual(await snapshot(db), before);

        // Once the table is out of the way, every migration applies, each recorded once.
        await db.exec('DROP TABLE leases');
        assert.deepEqual(await migrate(db), { applied: FILES });
        assert.deepEqual(
          await recorded(db),
          FILES.map((name) => `${name} x1`),
        );
      } finally {
        await dispose();
      }
    });
  });
}

const url = process.env.TEST_DATABASE_URL;
if (url) {
  describe('instances starting together on postgres', () => {
    test('two migrate() calls let go at the same moment on a new database: both succeed, each file applied once', {
      timeout: 120_000,
    }, async () => {
      const scratch = await scratchPostgresDatabase(url);
      const holder = new pg.Client({ connectionString: scratch.url });
      const first = openPostgres({ connectionString: scratch.url, poolSize: 2 });
      const second = openPostgres({ connectionString: scratch.url, poolSize: 2 });
      try {
        await holder.connect();
        // The test holds the migration lock, so both calls start and wait at it: none can get ahead.
        await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
        let settled = 0;
        const runs = [migrate(first), migrate(second)].map((run) =>
          run.then(
            (result) => ({ result, settled: ++settled }),
            (error: unknown) => ({ error, settled: ++settled }),
          ),
        );
        for (;;) {
          const { rows } = await holder.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks
               WHERE locktype = 'advisory' AND NOT granted
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          );
          if (rows[0]!.n === 2) break;
          assert.equal(settled, 0, `a migrate() ended while the test held advisory lock ${MIGRATION_LOCK}`);
          await new Promise((done) => setTimeout(done, 10));
        }
        // Both wait at the lock before anything else: nothing is made yet.
        const { rows: made } = await holder.query(`SELECT to_regclass('schema_migrations') AS t`);
        assert.deepEqual(made, [{ t: null }]);

        await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
        const outcomes = await Promise.all(runs);
        for (const outcome of outcomes) {
          assert.ok(
            'result' in outcome,
            `a migrate() failed: ${String((outcome as { error: unknown }).error)}`,
          );
        }
        const applied = outcomes.map((outcome) => ('result' in outcome ? outcome.result.applied : []));
        assert.deepEqual(
          applied.map((names) => names.length).sort((x, y) => x - y),
          [0, FILES.length],
          'one applied every file, the other none',
        );
        assert.deepEqual(applied.flat(), FILES);
        assert.deepEqual(
          await recorded(first),
          FILES.map((name) => `${name} x1`),
        );
        assert.deepEqual(await migrate(second), { applied: [] });
      } finally {
        await holder.end().catch(() => {});
        await first.close();
        await second.close();
        await scratch.drop();
      }
    });
  });
}
