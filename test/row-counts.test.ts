import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../src/db/database.js';
import { appForNewTenant, type TenantApp } from './helpers/app.js';
import { backends } from './helpers/backends.js';
import { customer, delivery } from './helpers/read-data.js';

/** The kept count must always equal what count(*) finds. */
async function assertCountsExact(db: Database, tenant: TenantApp) {
  const [row] = await db.query<Record<string, number>>(
    `SELECT
       (SELECT count(*) FROM customers WHERE tenant_id = $1)::int AS customers,
       (SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND acknowledged_at IS NULL)::int AS pending,
       COALESCE((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'customers'), 0)::int AS kept_customers,
       COALESCE((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'deliveries_pending'), 0)::int AS kept_pending`,
    [tenant.tenantId],
  );
  assert.equal(row!.kept_customers, row!.customers, 'customers');
  assert.equal(row!.kept_pending, row!.pending, 'pending deliveries');
  const customers = await tenant.get('/v1/customers?limit=1');
  const pending = await tenant.get('/v1/deliveries/pending?limit=1');
  assert.equal(customers.body.meta.totalItems, row!.customers);
  assert.equal(pending.body.meta.totalItems, row!.pending);
  return row!;
}

for (const backend of backends()) {
  describe(`unfiltered totals kept by triggers on ${backend.name}`, () => {
    test('stay exact through inserts, repeats, upserts and acknowledgements, per tenant', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      assert.deepEqual(await assertCountsExact(db, a), {
        customers: 0,
        pending: 0,
        kept_customers: 0,
        kept_pending: 0,
      });

      await a.post('/api/customers/batch-create', [customer('C1'), customer('C2'), customer('C1')]);
      await a.post('/api/customers/batch-create', [customer('C2', { name: 'updated' }), customer('C3')]);
      await b.post('/api/customers/batch-create', [customer('C1')]);
      await a.post('/api/deliveries/batch-create', [
        delivery('D1'),
        delivery('D2'),
        delivery('D3'),
        delivery('D1'),
      ]);
      await a.post('/api/deliveries/batch-create', [delivery('D3'), delivery('D4')]);
      await b.post('/api/deliveries/batch-create', [delivery('D1')]);
      assert.deepEqual(await assertCountsExact(db, a), {
        customers: 3,
        pending: 4,
        kept_customers: 3,
        kept_pending: 4,
      });

      await a.post('/v1/deliveries/acknowledge', ['D1', 'D2', 'NOPE']);
      await a.post('/v1/deliveries/acknowledge', ['D1']);
      assert.deepEqual(await assertCountsExact(db, a), {
        customers: 3,
        pending: 2,
        kept_customers: 3,
        kept_pending: 2,
      });
      assert.deepEqual(await assertCountsExact(db, b), {
        customers: 1,
        pending: 1,
        kept_customers: 1,
        kept_pending: 1,
      });

      // A write that bypasses the API is counted too: the triggers are in the database.
      await db.query("UPDATE deliveries SET acknowledged_at = NULL WHERE tenant_id = $1 AND code = 'D1'", [
        a.tenantId,
      ]);
      await db.query("DELETE FROM delivery_items WHERE tenant_id = $1 AND delivery_code = 'D4'", [
        a.tenantId,
      ]);
      await db.query("DELETE FROM deliveries WHERE tenant_id = $1 AND code = 'D4'", [a.tenantId]);
      assert.deepEqual(await assertCountsExact(db, a), {
        customers: 3,
        pending: 2,
        kept_customers: 3,
        kept_pending: 2,
      });
    });
  });
}
