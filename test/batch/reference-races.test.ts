import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { tenantClient } from '../../kit/tenant-client.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { around } from '../helpers/around-statements.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * The write statement refuses rows naming a missing product (SFA01, migration 011), in its own
 * snapshot; the query that names the missing products for the 400 runs after it. A product committed
 * between the two makes the refusal stale: the batch is written again, once. And on_invalid=skip
 * leaves out exactly the rows whose products the query before the write found missing, even when one
 * of them is committed before the write. Each race is made to happen, by a database whose statements
 * run a step of the test when a given one is sent.
 */

const STOCKS = '/api/stocks/batch-create';
const isWrite = (text: string) => text.startsWith('WITH written');
const isMissingQuery = (text: string) => text.startsWith('SELECT c.code');

async function tenantOn(db: Database, served: Database) {
  const tenant = await createTenant(db, `races-${Math.random().toString(36).slice(2)}`);
  const app = await buildApp({ db: served, config: testAuthConfig, logLevel: 'silent' });
  after(() => app.close());
  const client = await tenantClient(injectTransport(app), tenant);
  const product = (code: string) =>
    db.query(
      "INSERT INTO products (tenant_id, code, description, state, created_at) VALUES ($1, $2, 'p', 'Y', now())",
      [tenant.tenantId, code],
    );
  return { client, tenantId: tenant.tenantId, product };
}

// PostgreSQL only: each race needs another transaction to commit between two statements of the
// batch's (the write records its activity row itself, src/batch/write-block.ts); PGlite's one
// connection runs transactions one after another.
for (const backend of backends().filter((b) => b.name === 'postgres')) {
  describe(`references committed while a batch is written, on ${backend.name}`, () => {
    test('the write refused a product committed right after it: written again, 201', async () => {
      const db = await backend.db();
      let product: (code: string) => Promise<unknown> = async () => {};
      let writes = 0;
      const served = around(db, {
        // After the first write (refused: no product yet), the product commits.
        after: async (text) => {
          if (isWrite(text) && ++writes === 1) await product('LATE');
        },
      });
      const tenant = await tenantOn(db, served);
      product = tenant.product;
      const answer = await tenant.client.post(STOCKS, [{ product_code: 'LATE', location: 'L1' }]);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.equal(answer.body.created, 1);
      assert.equal(writes, 2, 'written a second time');
      assert.equal(await countRows(db, 'stocks', tenant.tenantId), 1);
    });

    test('refused again on the second write: a 500, nothing written', async () => {
      const db = await backend.db();
      let writes = 0;
      const served = around(db, {
        before: async (text) => {
          if (!isWrite(text)) return;
          writes++;
          // The first write is refused by the database itself (the product is missing); the second
          // as if another product had gone missing meanwhile (nothing deletes products: a fault).
          if (writes === 2) throw Object.assign(new Error('refused again'), { code: 'SFA01' });
        },
        after: async (text) => {
          if (isWrite(text) && writes === 1) await tenant.product('LATE');
        },
      });
      const tenant = await tenantOn(db, served);
      const answer = await tenant.client.post(STOCKS, [{ product_code: 'LATE', location: 'L1' }]);
      assert.equal(answer.status, 500, JSON.stringify(answer.body));
      assert.equal(writes, 2);
      assert.equal(await countRows(db, 'stocks', tenant.tenantId), 0);
    });

    test('on_invalid=skip: a product committed after the query found it missing stays left out', async () => {
      const db = await backend.db();
      let product: (code: string) => Promise<unknown> = async () => {};
      const served = around(db, {
        after: async (text) => {
          if (isMissingQuery(text)) await product('LATE');
        },
      });
      const tenant = await tenantOn(db, served);
      product = tenant.product;
      await tenant.product('P1');
      const answer = await tenant.client.post(`${STOCKS}?on_invalid=skip&outcomes=true`, [
        { product_code: 'P1', location: 'L1' },
        { product_code: 'LATE', location: 'L1' },
        { product_code: 'LATE', location: 'L2' },
      ]);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      // The answer was decided by the query: the two LATE rows rejected, and they were not written.
      assert.deepEqual([answer.body.created, answer.body.rejected], [1, 2]);
      assert.deepEqual(
        answer.body.errors.map((e: { index: number }) => e.index),
        [1, 2],
      );
      assert.deepEqual(
        answer.body.items.map((i: { index: number; outcome: string }) => [i.index, i.outcome]),
        [[0, 'created']],
      );
      assert.equal(await countRows(db, 'stocks', tenant.tenantId), 1);
    });
  });
}
