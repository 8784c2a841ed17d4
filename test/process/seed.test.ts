import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateItems } from '../../src/batch/validate-items.js';
import type { ItemsField } from '../../src/fields/field.js';
import { customers } from '../../src/resources/customers.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { generateCustomers, generateDeliveries } from '../../src/seed/generate.js';
import { type SeedProgress, seedTenant } from '../../src/seed/seed.js';
import { backends, newTenant } from '../helpers/backends.js';

describe('seed data generator', () => {
  test('is deterministic: item n depends only on the seed and n, not on the chunking', () => {
    const whole = generateDeliveries({ from: 0, count: 30, seed: 7, itemsPerDelivery: 3, customers: 10 });
    const parts = [
      ...generateDeliveries({ from: 0, count: 12, seed: 7, itemsPerDelivery: 3, customers: 10 }),
      ...generateDeliveries({ from: 12, count: 18, seed: 7, itemsPerDelivery: 3, customers: 10 }),
    ];
    assert.deepEqual(parts, whole);
    assert.deepEqual(
      generateCustomers({ from: 5, count: 5, seed: 7 }),
      generateCustomers({ from: 5, count: 5, seed: 7 }),
    );
    assert.notDeepEqual(
      generateCustomers({ from: 0, count: 5, seed: 7 }),
      generateCustomers({ from: 0, count: 5, seed: 8 }),
    );
  });

  test('produces items valid by the field tables, using most fields of each table', () => {
    const customerItems = generateCustomers({ from: 0, count: 2_000, seed: 1 });
    const deliveryItems = generateDeliveries({
      from: 0,
      count: 500,
      seed: 1,
      itemsPerDelivery: 5,
      customers: 2_000,
    });
    assert.deepEqual(validateItems(customers, customerItems).errors, []);
    assert.deepEqual(validateItems(deliveries, deliveryItems).errors, []);
    const used = (items: readonly Record<string, unknown>[]) =>
      new Set(items.flatMap((item) => Object.keys(item)));
    const customerFields = used(customerItems);
    const deliveryFields = used(deliveryItems);
    const itemFields = used(deliveryItems.flatMap((d) => d.items as Record<string, unknown>[]));
    // Only the prospect-rejection and reactivation details (rare in real data) are always left out.
    assert.ok(customerFields.size >= Object.keys(customers.fields).length - 10, [...customerFields].join());
    assert.ok(deliveryFields.size >= Object.keys(deliveries.fields).length - 2, [...deliveryFields].join());
    assert.equal(itemFields.size, Object.keys((deliveries.fields.items as ItemsField).fields).length);
    // Unique codes, creation dates in code order; every client_id names a generated customer.
    assert.equal(new Set(customerItems.map((c) => c.code)).size, customerItems.length);
    const created = customerItems.map((c) => c.created_at as string);
    assert.deepEqual([...created].sort(), created);
    const codes = new Set(customerItems.map((c) => c.code));
    for (const delivery of deliveryItems)
      assert.ok(codes.has(delivery.client_id), String(delivery.client_id));
  });
});

for (const backend of backends()) {
  describe(`seedTenant on ${backend.name}`, () => {
    test('loads the requested counts through loadBatch, in chunks, and adds nothing when run again', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      const progress: SeedProgress[] = [];
      const options = { customers: 250, deliveries: 120, itemsPerDelivery: 4, seed: 3, chunk: 100 };
      const first = await seedTenant(db, tenantId, { ...options, onProgress: (p) => progress.push(p) });
      assert.deepEqual(first, {
        customers: { created: 250, updated: 0 },
        deliveries: { created: 120, ignored: 0 },
      });
      assert.deepEqual(
        progress.map((p) => `${p.phase} ${p.done}/${p.total}`),
        [
          'customers 100/250',
          'customers 200/250',
          'customers 250/250',
          'deliveries 100/120',
          'deliveries 120/120',
        ],
      );
      const counts = async () => {
        const [row] = await db.query<Record<string, number>>(
          `SELECT (SELECT count(*) FROM customers WHERE tenant_id = $1)::int AS customers,
                  (SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND acknowledged_at IS NULL)::int AS pending,
                  (SELECT count(*) FROM delivery_items WHERE tenant_id = $1)::int AS items,
                  (SELECT count(*) FROM deliveries d WHERE tenant_id = $1 AND NOT EXISTS
                     (SELECT 1 FROM customers c WHERE c.tenant_id = d.tenant_id AND c.code = d.client_id))::int AS orphans`,
          [tenantId],
        );
        return row;
      };
      assert.deepEqual(await counts(), { customers: 250, pending: 120, items: 480, orphans: 0 });

      const again = await seedTenant(db, tenantId, options);
      // "updated" counts the keys that existed (as the batch endpoint does); their values are unchanged,
      // so no row was rewritten and no modification date set to now.
      assert.deepEqual(again, {
        customers: { created: 0, updated: 250 },
        deliveries: { created: 0, ignored: 120 },
      });
      assert.deepEqual(await counts(), { customers: 250, pending: 120, items: 480, orphans: 0 });
      const [touched] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM customers
         WHERE tenant_id = $1 AND updated_at > (now() AT TIME ZONE 'UTC') - interval '1 day'`,
        [tenantId],
      );
      assert.equal(touched!.n, 0);
    });

    test('refuses counts out of range before writing anything', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      await assert.rejects(seedTenant(db, tenantId, { customers: -1, deliveries: 0 }), /customers must be/);
      await assert.rejects(
        seedTenant(db, tenantId, { customers: 0, deliveries: 1, itemsPerDelivery: 1001 }),
        /items per delivery must be/,
      );
    });
  });
}
