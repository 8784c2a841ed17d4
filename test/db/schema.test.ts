import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { after, describe, test } from 'node:test';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import type { Database, Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import { type Field, ItemsField } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { backends } from '../helpers/backends.js';
import { BATCH_ENDPOINTS } from '../helpers/batch-items.js';

/*
 * The migrations and the field tables describe the same columns twice; information_schema says whether
 * they agree: lengths, precisions, types, NOT NULL and primary keys.
 */

interface Column {
  table_name: string;
  column_name: string;
  data_type: string;
  character_maximum_length: number | null;
  numeric_precision: number | null;
  numeric_scale: number | null;
  is_nullable: 'YES' | 'NO';
}

async function columnsOf(
  db: Queryable,
  tables: readonly string[],
): Promise<Map<string, Map<string, Column>>> {
  const rows = await db.query<Column>(
    `SELECT table_name::text AS table_name, column_name::text AS column_name, data_type::text AS data_type,
            character_maximum_length::int AS character_maximum_length,
            numeric_precision::int AS numeric_precision, numeric_scale::int AS numeric_scale,
            is_nullable::text AS is_nullable
     FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ANY($1::text[])`,
    [tables],
  );
  const byTable = new Map<string, Map<string, Column>>();
  for (const row of rows) {
    if (!byTable.has(row.table_name)) byTable.set(row.table_name, new Map());
    byTable.get(row.table_name)!.set(row.column_name, row);
  }
  return byTable;
}

async function primaryKeyOf(db: Queryable, table: string): Promise<string[]> {
  const rows = await db.query<{ column_name: string }>(
    `SELECT k.column_name::text AS column_name
     FROM information_schema.table_constraints c
     JOIN information_schema.key_column_usage k
       ON k.constraint_schema = c.constraint_schema AND k.constraint_name = c.constraint_name
      AND k.table_name = c.table_name
     WHERE c.table_schema = current_schema() AND c.table_name = $1 AND c.constraint_type = 'PRIMARY KEY'
     ORDER BY k.ordinal_position`,
    [table],
  );
  return rows.map((row) => row.column_name);
}

function checkFields(
  where: string,
  columns: Map<string, Column> | undefined,
  fields: Readonly<Record<string, Field>>,
  insertDefaults: Readonly<Record<string, string>> = {},
): void {
  assert.ok(columns, `${where}: table exists`);
  for (const [name, field] of Object.entries(fields)) {
    // What information_schema shows for the field's column, as the field type says it.
    const type = field.columnType;
    if (type === undefined) continue; // not a column (items: a table of its own, checked by the caller)
    const column: Column | undefined = columns.get(name);
    assert.ok(column, `${where}.${name}: column exists`);
    const actual: Record<string, unknown> = Object.fromEntries(
      Object.keys(type).map((key): [string, unknown] => [key, column[key as keyof Column]]),
    );
    assert.deepEqual(actual, type, `${where}.${name}`);
    if (field.required) assert.equal(column.is_nullable, 'NO', `${where}.${name}: required, so NOT NULL`);
    else if (field.defaultValue === null && !(name in insertDefaults)) {
      assert.equal(column.is_nullable, 'YES', `${where}.${name}: optional without default, so nullable`);
    }
  }
}

/**
 * The batch endpoints of master data (backoffice-api.md 4.4 to 4.9 and the product master: the
 * resources without a list, helpers/batch-items.ts): no column but these.
 */
const MASTER_DATA = BATCH_ENDPOINTS.map((endpoint) => endpoint.name);

function systemColumns(resource: BatchResource): string[] {
  return [
    'tenant_id',
    'created_at',
    // Every resource shows a modification date in the change feed, and records its place there
    // (migration 008).
    'updated_at',
    'change_xid',
    'changed_at',
    ...Object.keys(resource.setOnInsert ?? {}),
    ...Object.keys(resource.setOnUpdate ?? {}),
  ];
}

for (const backend of backends()) {
  describe(`schema on ${backend.name}`, () => {
    for (const resource of batchResources) {
      test(`${resource.name}: the columns of ${resource.table} agree with the field table`, async () => {
        const db = await backend.db();
        const tables = [resource.table, ...(resource.children ? [resource.children.table] : [])];
        const columns = await columnsOf(db, tables);
        checkFields(resource.table, columns.get(resource.table), resource.fields, resource.insertDefaults);
        assert.deepEqual(
          await primaryKeyOf(db, resource.table),
          ['tenant_id', ...resource.key],
          'primary key',
        );

        if (MASTER_DATA.includes(resource.name)) {
          const expected = new Set([...systemColumns(resource), ...Object.keys(resource.fields)]);
          assert.deepEqual(
            [...columns.get(resource.table)!.keys()].sort(),
            [...expected].sort(),
            'no column the field table does not know',
          );
        }

        // The change feed's index: tenant, position, key, partial on the condition only the feed's
        // statements state (migration 012; src/sql/changes.ts feedIndexCondition).
        const [feedIndex] = await db.query<{ definition: string }>(
          'SELECT pg_get_indexdef(indexrelid) AS definition FROM pg_index WHERE indexrelid = $1::regclass',
          [`${resource.table}_changes`],
        );
        assert.match(
          feedIndex?.definition ?? '',
          new RegExp(
            `\\(tenant_id, change_xid, ${resource.key.join(', ')}\\) WHERE \\(change_xid > '0'::xid8\\)$`,
          ),
          'the feed index',
        );

        for (const [name, field] of Object.entries(resource.fields)) {
          if (!(field instanceof ItemsField)) continue; // the children's table, checked as a table
          assert.ok(resource.children, `${resource.name}.${name}: an items field has a children table`);
          const { table, parentColumn } = resource.children;
          const child = columns.get(table);
          checkFields(table, child, field.fields);
          const parent = child!.get(parentColumn);
          const parentKey = columns.get(resource.table)!.get(resource.key[0]!)!;
          assert.ok(parent, `${table}.${parentColumn} exists`);
          assert.equal(parent.data_type, parentKey.data_type);
          assert.equal(parent.character_maximum_length, parentKey.character_maximum_length);
          assert.deepEqual(await primaryKeyOf(db, table), ['tenant_id', parentColumn, field.key]);
        }
      });
    }
  });
}

async function migrationFiles(): Promise<string[]> {
  const names = await readdir(new URL('../../src/db/migrations/', import.meta.url));
  return names.filter((name) => name.endsWith('.sql')).sort();
}

/** Two instances migrating the same new database at once: each migration is applied exactly once. */
async function checkConcurrentMigration(first: Database, second: Database): Promise<void> {
  const files = await migrationFiles();
  assert.ok(files.length > 0);
  const results = await Promise.all([migrate(first), migrate(second)]);
  assert.deepEqual(
    results.map((r) => r.applied.length).sort(),
    [0, files.length],
    'one instance applied everything, the other nothing',
  );
  assert.deepEqual(results.flatMap((r) => r.applied).sort(), files);
  const recorded = await first.query<{ name: string; n: number }>(
    'SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name ORDER BY name',
  );
  assert.deepEqual(
    recorded,
    files.map((name) => ({ name, n: 1 })),
  );
  assert.deepEqual(await migrate(second), { applied: [] }, 'a third run applies nothing');
  const tables = await first.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_name = ANY($1::text[])`,
    [batchResources.map((r) => r.table)],
  );
  assert.equal(tables[0]!.n, new Set(batchResources.map((r) => r.table)).size, 'every batch table exists');
}

describe('migrate() run twice at once on a new database', () => {
  test('pglite: the same database, two migrations at once', async () => {
    const db = await openPglite(undefined);
    after(() => db.close());
    await checkConcurrentMigration(db, db);
  });

  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    test('postgres: two instances (two pools) on a database created for this test', async () => {
      const scratch = await scratchPostgresDatabase(url);
      const first = openPostgres({ connectionString: scratch.url, poolSize: 2 });
      const second = openPostgres({ connectionString: scratch.url, poolSize: 2 });
      try {
        await checkConcurrentMigration(first, second);
      } finally {
        await first.close();
        await second.close();
        await scratch.drop();
      }
    });
  }
});
