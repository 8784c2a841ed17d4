import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { appForNewTenant } from '../helpers/app.js';
import { around } from '../helpers/around-statements.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * A batch without an Idempotency-Key writes in a transaction of its own with its activity row
 * (src/http/keyed-reply.ts, src/db/own-transaction.ts): a write that may name a missing product runs
 * there without a savepoint, and when it does name one the transaction is given up and the batch
 * answered on its own: the same 400, nothing written, the refusal recorded. A keyed batch keeps its
 * savepoint: its transaction must outlive the refusal to keep it.
 */

const STOCKS = '/api/stocks/batch-create';
const MISSING = 'Product does not exist in the product master';

for (const backend of backends()) {
  describe(`a batch's own transaction on ${backend.name}`, () => {
    test('no savepoint for a batch without a key; a refused one is answered alone, recorded, writes nothing', async () => {
      const db = await backend.db();
      const sent: string[] = [];
      const served = around(db, {
        before: async (text) => {
          sent.push(text);
        },
      });
      const a = await appForNewTenant(served);
      const product = await a.post('/api/products/batch-create', [{ code: 'P1', description: 'p' }]);
      assert.equal(product.status, 201, product.text);

      sent.length = 0;
      const written = await a.post(STOCKS, [{ product_code: 'P1', location: 'L1' }]);
      assert.equal(written.status, 201, written.text);
      assert.deepEqual(
        sent.filter((text) => /^SAVEPOINT/i.test(text)),
        [],
        "no savepoint in the request's own transaction",
      );
      assert.ok(
        sent.some((text) => text.startsWith('INSERT INTO activity')),
        'its activity row',
      );

      sent.length = 0;
      const keyed = await a.post(STOCKS, [{ product_code: 'P1', location: 'L2' }], {
        'idempotency-key': 'own-transaction-1',
      });
      assert.equal(keyed.status, 201, keyed.text);
      assert.equal(sent.filter((text) => /^SAVEPOINT/i.test(text)).length, 1, 'a keyed write keeps it');

      const refused = await a.post(STOCKS, [
        { product_code: 'P1', location: 'L3' },
        { product_code: 'NOPE', location: 'L3' },
      ]);
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(refused.body.errors, [
        { index: 1, errors: [{ field: 'product_code', message: MISSING }] },
      ]);
      assert.equal(await countRows(db, 'stocks', a.tenant.tenantId), 2, 'the refused batch wrote nothing');
      const page = await a.get('/v1/activity?resource=stocks');
      assert.deepEqual(
        (page.body.data as Array<{ status: number; problems: unknown }>).map((row) => [
          row.status,
          row.problems,
        ]),
        [
          [400, refused.body.errors],
          [201, null],
          [201, null],
        ],
      );
    });
  });
}
