import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadBatch } from '../../src/batch/write-block.js';
import type { FieldValue } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { prices } from '../../src/resources/prices.js';
import { products } from '../../src/resources/products.js';
import { writeParams } from '../../src/sql/batch-write.js';
import { backends, newTenant } from '../helpers/backends.js';

/*
 * A column that no row of a statement gives a value for is sent as the empty array, which the
 * statement's unnest of several arrays pads with NULLs: the rows must read exactly as they did when
 * a NULL per row was sent, on insert and on update, for parents and their children.
 */

/** Each column's parameter by name (parents' columns; children's follow). */
function paramsByName(resource: BatchResource, chunk: readonly string[]): Record<string, string> {
  return Object.fromEntries(resource.columnPositions.map((at, n) => [resource.fieldNames[at]!, chunk[n]!]));
}

test('a column no row gives a value for is the empty array; a column one row gives is the whole literal', () => {
  const row = (code: string, discount: FieldValue): FieldValue[] => {
    const values: FieldValue[] = resource.fieldNames.map(() => null);
    values[resource.fieldNames.indexOf('product_code')] = code;
    values[resource.fieldNames.indexOf('price_list')] = 'L1';
    values[resource.fieldNames.indexOf('price')] = '1.5';
    values[resource.fieldNames.indexOf('maximum_discount')] = discount;
    return values;
  };
  const resource = prices;
  const { chunks } = writeParams(resource, [row('A', null), row('B', '2'), row('C', null)], 10);
  const params = paramsByName(resource, chunks[0]!);
  assert.equal(params.product_code, '{"A","B","C"}');
  assert.equal(params.maximum_discount, '{null,"2",null}');
  assert.equal(params.maximum_discount2, '{}');
  assert.equal(params.factor_description, '{}');
});

for (const backend of backends()) {
  describe(`columns left out by every item, ${backend.name}`, () => {
    test('prices: inserted as NULL, set, and set back to NULL by an upsert that leaves them out', async () => {
      const db = await backend.db();
      const tenant = await newTenant(db);
      await loadBatch(db, tenant, products, [
        { code: 'P1', description: 'one' },
        { code: 'P2', description: 'two' },
      ]);
      const bare = [
        { product_code: 'P1', price_list: 'L1', price: 10 },
        { product_code: 'P2', price_list: 'L1', price: 20 },
      ];
      const read = () =>
        db.query<{
          product_code: string;
          price: string;
          maximum_discount: string | null;
          charges: string | null;
        }>(
          `SELECT product_code, price::text, maximum_discount::text, charges::text FROM prices
           WHERE tenant_id = $1 ORDER BY product_code`,
          [tenant],
        );

      assert.equal((await loadBatch(db, tenant, prices, bare)).created, 2);
      assert.deepEqual(await read(), [
        { product_code: 'P1', price: '10.00', maximum_discount: null, charges: null },
        { product_code: 'P2', price: '20.00', maximum_discount: null, charges: null },
      ]);

      await loadBatch(db, tenant, prices, [{ ...bare[0], maximum_discount: 5, charges: 1.25 }, bare[1]]);
      assert.deepEqual(await read(), [
        { product_code: 'P1', price: '10.00', maximum_discount: '5.00', charges: '1.25' },
        { product_code: 'P2', price: '20.00', maximum_discount: null, charges: null },
      ]);

      const counts = await loadBatch(db, tenant, prices, bare);
      assert.deepEqual(counts, { created: 0, updated: 2, ignored: 0 });
      assert.deepEqual(await read(), [
        { product_code: 'P1', price: '10.00', maximum_discount: null, charges: null },
        { product_code: 'P2', price: '20.00', maximum_discount: null, charges: null },
      ]);
    });

    test('deliveries: parents and items without their optional fields, created_at defaulted', async () => {
      const db = await backend.db();
      const tenant = await newTenant(db);
      const item = (n: number) => ({
        item_number: n,
        product_code: `P${n}`,
        product_quantity: 1,
        product_tax: 19,
        product_price: 100,
        factor: 1,
      });
      const delivery = (code: string, items: number) => ({
        code,
        client_id: 'C1',
        seller_id: 'S1',
        status_code: '1',
        scheduled_date: '2026-11-26T10:00:00',
        items: Array.from({ length: items }, (_, at) => item(at + 1)),
      });
      const counts = await loadBatch(db, tenant, deliveries, [delivery('D1', 2), delivery('D2', 1)]);
      assert.equal(counts.created, 2);
      const parents = await db.query<{
        code: string;
        news: string | null;
        weight: string | null;
        dated: boolean;
      }>(
        `SELECT code, news, weight::text, created_at IS NOT NULL AS dated FROM deliveries
         WHERE tenant_id = $1 ORDER BY code`,
        [tenant],
      );
      assert.deepEqual(parents, [
        { code: 'D1', news: null, weight: null, dated: true },
        { code: 'D2', news: null, weight: null, dated: true },
      ]);
      const items = await db.query<{ delivery_code: string; item_number: number; discount1: string | null }>(
        `SELECT delivery_code, item_number, discount1::text FROM delivery_items
         WHERE tenant_id = $1 ORDER BY delivery_code, item_number`,
        [tenant],
      );
      assert.deepEqual(items, [
        { delivery_code: 'D1', item_number: 1, discount1: null },
        { delivery_code: 'D1', item_number: 2, discount1: null },
        { delivery_code: 'D2', item_number: 1, discount1: null },
      ]);
    });
  });
}
