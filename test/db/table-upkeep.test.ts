import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadBatch } from '../../src/batch/write-block.js';
import type { Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { PGLITE_UPKEEP, POSTGRES_UPKEEP, TableUpkeep } from '../../src/db/table-upkeep.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { products } from '../../src/resources/products.js';
import { generateDeliveries } from '../../src/seed/generate.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { ensureTenant } from '../helpers/backends.js';
import { delivery, item } from '../helpers/read-data.js';

/*
 * PGlite has no autovacuum: the service runs VACUUM (ANALYZE) of a table's indexed columns itself
 * once enough rows changed (src/db/table-upkeep.ts).
 */

/** A database that records statements; reltuples answers `rows`. */
function recording(rows: () => number, fail = false) {
  const statements: string[] = [];
  const db: Queryable = {
    async query<Row>(text: string) {
      statements.push(text.split('\n')[0]!);
      if (fail) throw new Error('database gone');
      return (
        text.includes('pg_index') ? [{ name: 'tenant_id' }, { name: 'code' }] : [{ rows: rows() }]
      ) as Row[];
    },
    async exec(script: string) {
      statements.push(script);
    },
  };
  return { db, statements };
}

describe('TableUpkeep', () => {
  test('runs after 1,000 changed rows plus 20 % of the rows at its last run', async () => {
    let rows = 0;
    const { db, statements } = recording(() => rows);
    const upkeep = new TableUpkeep(db, PGLITE_UPKEEP);
    const vacuums = () => statements.filter((s) => s.startsWith('VACUUM'));
    await upkeep.wrote('products', 999);
    assert.equal(vacuums().length, 0, '999 rows: not yet');
    rows = 1_000; // what reltuples says after this run
    await upkeep.wrote('products', 1);
    assert.ok(
      statements.includes('VACUUM (ANALYZE) "products" ("tenant_id", "code")'),
      statements.join('\n'),
    );
    await upkeep.wrote('products', 1_199);
    assert.equal(vacuums().length, 1, '1,199 of the 1,200 needed at 1,000 rows');
    rows = 0;
    await upkeep.wrote('stocks', 1_199);
    assert.equal(vacuums().length, 2, 'stocks counts on its own');
    await upkeep.wrote('products', 1);
    assert.equal(vacuums().filter((s) => s.startsWith('VACUUM (ANALYZE) "products"')).length, 2);
    // Every run is counted, with its time (GET /metrics).
    const stats = upkeep.stats();
    assert.equal(stats.runs, 3);
    assert.ok(stats.seconds > 0 && stats.seconds < 1, `${stats.seconds} s`);
  });

  test('a table seen first starts from the rows the planner counted: a restart waits for 20 % more', async () => {
    const { db, statements } = recording(() => 100_000);
    const upkeep = new TableUpkeep(db, PGLITE_UPKEEP);
    const vacuums = () => statements.filter((s) => s.startsWith('VACUUM'));
    await upkeep.wrote('customers', 20_999);
    assert.equal(vacuums().length, 0, '20,999 of the 21,000 needed at 100,000 rows');
    await upkeep.wrote('customers', 1);
    assert.equal(vacuums().length, 1);
  });

  test('on PostgreSQL: ANALYZE once a table without statistics changed 1,000 rows, then only past tenfold growth', async () => {
    let rows = 0;
    const { db, statements } = recording(() => rows);
    const upkeep = new TableUpkeep(db, POSTGRES_UPKEEP);
    const analyses = () => statements.filter((s) => s.startsWith('ANALYZE'));
    await upkeep.wrote('prices', 999);
    assert.equal(analyses().length, 0);
    rows = 10_000;
    await upkeep.wrote('prices', 9_001);
    assert.deepEqual(analyses(), ['ANALYZE "prices" ("tenant_id", "code")']);
    // Upserts of a table of 10,000 rows: autovacuum's business, not the request's.
    for (let round = 0; round < 10; round++) await upkeep.wrote('prices', 10_000);
    assert.equal(analyses().length, 1, '100,000 of the 101,000 needed at 10,000 rows');
    await upkeep.wrote('prices', 1_000);
    assert.equal(analyses().length, 2);
  });

  test('a failed upkeep does not throw: the write it follows has committed', async () => {
    const { db } = recording(() => 0, true);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      await new TableUpkeep(db, PGLITE_UPKEEP).wrote('products', 5_000);
      await new Promise((done) => setImmediate(done));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, ['upkeep of table products failed: database gone']);
  });

  test('batches and acknowledgements tell the database how many rows they changed, per table', async () => {
    const db = await openPglite(undefined);
    try {
      await migrate(db);
      const told: Array<[string, number]> = [];
      const tenant = await appForNewTenant({
        ...db,
        wrote: async (table, rows) => {
          told.push([table, rows]);
        },
      });
      await seedProducts(tenant, ['P1', 'P2']);
      const batch = await tenant.post('/api/deliveries/batch-create', [
        delivery('D1', { items: [item(1), item(2)] }),
        delivery('D2', { items: [item(1)] }),
      ]);
      assert.equal(batch.status, 201);
      const ack = await tenant.post('/v1/deliveries/acknowledge', ['D1', 'NOPE']);
      assert.equal(ack.status, 200);
      assert.deepEqual(told, [
        ['products', 2],
        ['deliveries', 2],
        ['delivery_items', 3],
        ['deliveries', 1],
      ]);
    } finally {
      await db.close();
    }
  });

  test('its runs and their time are on GET /metrics', async () => {
    const db = await openPglite(undefined);
    try {
      await migrate(db);
      const tenant = await appForNewTenant(db);
      const counted = async (name: string) => {
        const text = await tenant.transport.app.metrics.registry.metrics();
        const line = text.split('\n').find((l) => l.startsWith(`${name} `));
        return line === undefined ? undefined : Number(line.split(' ')[1]);
      };
      assert.equal(await counted('sfa_db_upkeep_runs_total'), 0);
      const items = Array.from({ length: 1_500 }, (_, at) => ({ code: `M${at}`, description: 'upkeep' }));
      assert.equal((await tenant.post('/api/products/batch-create', items)).status, 201);
      assert.equal(await counted('sfa_db_upkeep_runs_total'), 1, 'a table never analysed: 1,500 rows run it');
      const seconds = (await counted('sfa_db_upkeep_seconds_total'))!;
      assert.ok(seconds > 0 && seconds < 30, `${seconds} s`);
    } finally {
      await db.close();
    }
  });

  test('on PGlite, a batch past the threshold leaves statistics and a visibility map', async () => {
    const db = await openPglite(undefined);
    try {
      await migrate(db);
      const tenant = await ensureTenant(db, 'upkeep');
      const stats = async () => {
        const [row] = await db.query<{ reltuples: number; allvisible: number }>(
          "SELECT reltuples::float8 AS reltuples, relallvisible AS allvisible FROM pg_class WHERE oid = 'products'::regclass",
        );
        return row!;
      };
      const items = (from: number, count: number) =>
        Array.from({ length: count }, (_, at) => ({ code: `P${from + at}`, description: 'upkeep' }));
      await loadBatch(db, tenant, products, items(0, 500));
      assert.equal((await stats()).reltuples, -1, 'never analysed');
      await loadBatch(db, tenant, products, items(500, 1_000));
      const analysed = await stats();
      assert.equal(analysed.reltuples, 1_500);
      assert.ok(analysed.allvisible > 0, 'vacuumed: pages all visible');

      // Deliveries: the indexed columns and the partial index's predicate column get statistics,
      // the others do not (they steer no plan).
      await loadBatch(
        db,
        tenant,
        deliveries,
        generateDeliveries({ from: 0, count: 1_000, seed: 1, itemsPerDelivery: 1, customers: 10 }),
      );
      const columns = await db.query<{ attname: string }>(
        "SELECT attname FROM pg_stats WHERE tablename = 'deliveries'",
      );
      const analysedColumns = new Set(columns.map((c) => c.attname));
      for (const column of ['tenant_id', 'code', 'reported_at', 'acknowledged_at']) {
        assert.ok(analysedColumns.has(column), `${column} analysed: ${[...analysedColumns]}`);
      }
      assert.ok(!analysedColumns.has('observations'), 'an unindexed column is not');
    } finally {
      await db.close();
    }
  });
});
