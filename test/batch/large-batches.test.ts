import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadBatch } from '../../src/batch/write-block.js';
import { type Database, inTransaction, type Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite, PGLITE_STATEMENT_ROWS } from '../../src/db/pglite.js';
import { fieldMessages } from '../../src/fields/messages.js';
import { products } from '../../src/resources/products.js';
import { stocks } from '../../src/resources/stocks.js';
import { buildWriteSql } from '../../src/sql/batch-write.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends, ensureTenant } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * A batch larger than one PGlite statement (PGLITE_STATEMENT_ROWS) is still one write: all of it or nothing, its
 * repeated keys settled before it is cut, its counts those of the whole batch. PostgreSQL writes it
 * with one statement; the same tests hold there.
 */

const SIZE = PGLITE_STATEMENT_ROWS * 2 + 500; // three chunks, the last one short
const code = (at: number) => `P${at}`;
const stock = (at: number, location = 'W1') => ({ product_code: code(at), location, quantity: at });

for (const backend of backends()) {
  describe(`batches of ${SIZE} items on ${backend.name}`, () => {
    test('an unknown product in the last chunk: 400 naming it, nothing written', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(
        tenant,
        Array.from({ length: SIZE - 1 }, (_, at) => code(at)),
      );
      const items = Array.from({ length: SIZE }, (_, at) => stock(at));
      const refused = await tenant.post('/api/stocks/batch-create', items);
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.errors, [
        { index: SIZE - 1, errors: [{ field: 'product_code', message: fieldMessages.unknownProduct }] },
      ]);
      assert.equal(
        await countRows(db, 'stocks', tenant.tenant.tenantId),
        0,
        'the chunks before it were rolled back',
      );
    });

    test('keys repeated across chunk boundaries count once; counts are the whole batch', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(
        tenant,
        Array.from({ length: SIZE }, (_, at) => code(at)),
      );
      const items = Array.from({ length: SIZE }, (_, at) => stock(at));
      items[SIZE - 1] = stock(3); // the first chunk's key again, in the last chunk
      const created = await tenant.post('/api/stocks/batch-create', items);
      assert.equal(created.status, 201);
      assert.deepEqual(
        { created: created.body.created, updated: created.body.updated, ignored: created.body.ignored },
        { created: SIZE - 1, updated: 0, ignored: 1 },
      );
      const again = await tenant.post('/api/stocks/batch-create', [...items, stock(0, 'W2')]);
      assert.deepEqual(
        { created: again.body.created, ignored: again.body.ignored },
        { created: 1, ignored: SIZE },
      );
      const [row] = await db.query<{ n: number; total: string }>(
        'SELECT count(*)::int AS n, sum(quantity)::text AS total FROM stocks WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      // The first occurrence of P3 (quantity 3) was kept, the repeat ignored.
      const expected = Array.from({ length: SIZE - 1 }, (_, at) => at).reduce((sum, n) => sum + n, 0);
      assert.deepEqual(row, { n: SIZE, total: `${expected}.00` });
    });
  });
}

test('a batch is cut at the statement size the database asks for, inside one transaction; Infinity: one statement', async () => {
  const db = await openPglite(undefined);
  try {
    await migrate(db);
    const tenant = await ensureTenant(db, 'chunks');
    await loadBatch(
      db,
      tenant,
      products,
      Array.from({ length: SIZE }, (_, at) => ({ code: code(at), description: 'chunked' })),
    );
    // The real database, its write statements counted and told apart by where they run.
    const writes: string[] = [];
    const counted = (target: Queryable, where: string): Queryable => ({
      exec: (script) => target.exec(script),
      query: (text, params) => {
        if (text === buildWriteSql(stocks)) writes.push(where);
        return target.query(text, params);
      },
    });
    const spied: Database = {
      ...db,
      ...counted(db, 'alone'),
      transaction: (work) =>
        db.transaction((tx) => work(inTransaction(counted(tx, 'in transaction'), tx.copyFrom))),
    };
    const first = await loadBatch(
      spied,
      tenant,
      stocks,
      Array.from({ length: SIZE }, (_, at) => stock(at)),
    );
    assert.equal(first.created, SIZE);
    assert.deepEqual(writes, ['in transaction', 'in transaction', 'in transaction']);
    writes.length = 0;
    const whole = { ...spied, statementRows: Number.POSITIVE_INFINITY };
    const second = await loadBatch(
      whole,
      tenant,
      stocks,
      Array.from({ length: SIZE }, (_, at) => stock(at, 'W2')),
    );
    assert.equal(second.created, SIZE);
    // One statement, atomic on its own (a missing product fails it whole): no transaction.
    assert.deepEqual(writes, ['alone']);
  } finally {
    await db.close();
  }
});
