import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { appForNewTenant } from '../helpers/app.js';
import { around } from '../helpers/around-statements.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * A batch without an Idempotency-Key records its activity row with its write statement itself
 * (src/batch/write-block.ts, recordingCte in src/sql/activity.ts): one statement and no transaction
 * around it, so the row and the rows written commit or fail together. A refused write records its
 * 400 after its answer (the onSend hook). A keyed batch records in the transaction that keeps its
 * answer, as before.
 */

const STOCKS = '/api/stocks/batch-create';
const PRICES = '/api/prices/batch-create';
const MISSING = 'Product does not exist in the product master';

const price = (code: string, value: string) => ({ product_code: code, price_list: 'L1', price: value });

interface Row {
  status: number;
  items: number | null;
  created: number | null;
  updated: number | null;
  ignored: number | null;
  problems: unknown;
}

for (const backend of backends()) {
  describe(`an unkeyed batch's activity row in its write statement, on ${backend.name}`, () => {
    test("one statement, no transaction; its counts are the answer's; a refused one is recorded after", async () => {
      const db = await backend.db();
      const sent: string[] = [];
      const served = around(db, { before: async (text) => void sent.push(text) });
      const a = await appForNewTenant(served);
      const product = await a.post('/api/products/batch-create', [
        { code: 'P1', description: 'p' },
        { code: 'P2', description: 'p' },
      ]);
      assert.equal(product.status, 201, product.text);

      // Insert-if-absent: a repeat and an existing key are ignored.
      sent.length = 0;
      const stocks = [
        { product_code: 'P1', location: 'L1' },
        { product_code: 'P1', location: 'L1' },
        { product_code: 'P2', location: 'L1' },
      ];
      const written = await a.post(STOCKS, stocks);
      assert.equal(written.status, 201, written.text);
      assert.equal(sent.length, 1, `one statement: ${sent.map((t) => t.slice(0, 20)).join(' | ')}`);
      assert.match(sent[0]!, /^WITH written AS/);
      assert.match(sent[0]!, /recorded AS \(\n\s+INSERT INTO activity/);
      const again = await a.post(STOCKS, [...stocks, { product_code: 'P2', location: 'L2' }]);
      assert.deepEqual([again.body.created, again.body.updated, again.body.ignored], [1, 0, 3]);

      // Upsert: a repeat is ignored, every distinct row not inserted is updated.
      const prices = await a.post(PRICES, [price('P1', '1'), price('P1', '2'), price('P2', '3')]);
      assert.equal(prices.status, 201, prices.text);
      const upserted = await a.post(PRICES, [
        price('P1', '4'),
        price('P2', '3'),
        { ...price('P2', '5'), price_list: 'L2' },
      ]);
      assert.deepEqual([upserted.body.created, upserted.body.updated, upserted.body.ignored], [1, 2, 0]);

      const refused = await a.post(STOCKS, [
        { product_code: 'P1', location: 'L3' },
        { product_code: 'NOPE', location: 'L3' },
      ]);
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(refused.body.errors, [
        { index: 1, errors: [{ field: 'product_code', message: MISSING }] },
      ]);
      assert.equal(await countRows(db, 'stocks', a.tenant.tenantId), 3, 'the refused batch wrote nothing');

      const rows = await db.query<Row>(
        'SELECT status, items, created, updated, ignored, problems FROM activity WHERE tenant_id = $1 AND resource <> $2 ORDER BY id',
        [a.tenant.tenantId, 'products'],
      );
      const answerOf = (b: { created: number; updated: number; ignored: number }) => [
        201,
        b.created + b.updated + b.ignored,
        b.created,
        b.updated,
        b.ignored,
      ];
      assert.deepEqual(
        rows.map((r) =>
          r.status === 400 ? [r.status, r.problems] : [r.status, r.items, r.created, r.updated, r.ignored],
        ),
        [
          answerOf(written.body),
          answerOf(again.body),
          answerOf(prices.body),
          answerOf(upserted.body),
          [400, refused.body.errors],
        ],
      );
      assert.deepEqual(answerOf(written.body), [201, 3, 2, 0, 1]);
    });

    test('a batch written in several statements (PGlite: 2,000 rows each) records its row in their transaction', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const products = Array.from({ length: Math.min(db.statementRows, 2_000) + 500 }, (_, n) => ({
        code: `P${n}`,
        description: 'p',
      }));
      const answer = await a.post('/api/products/batch-create', products);
      assert.equal(answer.status, 201, answer.text);
      const rows = await db.query<Row & { same: boolean }>(
        `SELECT status, items, created, updated, ignored, problems,
           xmin::text = (SELECT xmin::text FROM products WHERE tenant_id = $1 AND code = 'P0') AS same
         FROM activity WHERE tenant_id = $1`,
        [a.tenant.tenantId],
      );
      assert.deepEqual(
        rows.map((r) => [r.status, r.items, r.created, r.updated, r.ignored, r.same]),
        [[201, products.length, products.length, 0, 0, true]],
      );
    });

    test('a row that cannot be recorded undoes the write', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const tenantId = a.tenant.tenantId;
      // This tenant's activity rows are refused (as a full disk or a lost connection would fail them).
      await db.exec(`CREATE OR REPLACE FUNCTION refuse_activity_${tenantId}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tenant_id = ${tenantId} AND NEW.status = 201 THEN RAISE EXCEPTION 'activity refused'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER refuse_activity_${tenantId} BEFORE INSERT ON activity FOR EACH ROW EXECUTE FUNCTION refuse_activity_${tenantId}();`);
      try {
        const answer = await a.post('/api/products/batch-create', [{ code: 'P1', description: 'p' }]);
        assert.equal(answer.status, 500, answer.text);
        assert.equal(await countRows(db, 'products', tenantId), 0, 'the write went with its row');
        const [counted] = await db.query<{ n: string | null }>(
          `SELECT sum(n)::text AS n FROM (
             SELECT n FROM resource_rows WHERE tenant_id = $1 AND resource = 'products'
             UNION ALL SELECT created FROM written_deltas WHERE tenant_id = $1 AND resource = 'products') c`,
          [tenantId],
        );
        assert.equal(counted!.n, null, 'and so did its counts');
      } finally {
        await db.exec(
          `DROP TRIGGER refuse_activity_${tenantId} ON activity; DROP FUNCTION refuse_activity_${tenantId}();`,
        );
      }
    });
  });
}
