import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { Database } from '../../src/db/database.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { appForNewTenant, ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer, delivery } from '../helpers/read-data.js';

/** The kept count must always equal what count(*) finds. */
async function assertCountsExact(db: Database, tenant: TenantClient<NewTenant>) {
  const [row] = await db.query<Record<string, number>>(
    `SELECT
       (SELECT count(*) FROM customers WHERE tenant_id = $1)::int AS customers,
       (SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND acknowledged_at IS NULL)::int AS pending,
       COALESCE((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'customers'), 0)::int AS kept_customers,
       COALESCE((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'deliveries_pending'), 0)::int AS kept_pending`,
    [tenant.tenant.tenantId],
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
        a.tenant.tenantId,
      ]);
      await db.query("DELETE FROM delivery_items WHERE tenant_id = $1 AND delivery_code = 'D4'", [
        a.tenant.tenantId,
      ]);
      await db.query("DELETE FROM deliveries WHERE tenant_id = $1 AND code = 'D4'", [a.tenant.tenantId]);
      assert.deepEqual(await assertCountsExact(db, a), {
        customers: 3,
        pending: 2,
        kept_customers: 3,
        kept_pending: 2,
      });
    });
  });
}

for (const backend of backends()) {
  describe(`filtered totals on ${backend.name}: counted once per version, never stale`, () => {
    const FILTERED = '/v1/customers?created_from=2000-01-01&limit=1';
    const total = async (tenant: Pick<TenantClient<NewTenant>, 'get'>, path = FILTERED) => {
      const response = await tenant.get(path);
      assert.equal(response.status, 200);
      return response.body.meta.totalItems as number;
    };

    test('every write between two pages shows: inserts, upserts, updates, deletes, acknowledgements', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      await a.post('/api/customers/batch-create', [customer('C1'), customer('C2'), customer('C3')]);
      assert.equal(await total(a), 3);
      assert.equal(await total(a, `${FILTERED}&page=2`), 3, 'the next page of the same filter');
      await a.post('/api/customers/batch-create', [customer('C4')]);
      assert.equal(await total(a), 4, 'an insert');
      // ?modified_from lists customers updated since (updated_at is set by an upsert that finds one).
      const modified = '/v1/customers?modified_from=2000-01-01&limit=1';
      assert.equal(await total(a, modified), 0);
      await a.post('/api/customers/batch-create', [customer('C1', { name: 'changed' })]);
      assert.equal(await total(a, modified), 1, 'an upsert');
      await db.query("UPDATE customers SET updated_at = '1999-01-01' WHERE tenant_id = $1 AND code = 'C1'", [
        a.tenant.tenantId,
      ]);
      assert.equal(await total(a, modified), 0, 'an update outside the API');
      await db.query("DELETE FROM customers WHERE tenant_id = $1 AND code = 'C2'", [a.tenant.tenantId]);
      assert.equal(await total(a), 3, 'a delete');

      const bySeller = '/v1/deliveries/pending?seller_id=S1&limit=1';
      await a.post('/api/deliveries/batch-create', [delivery('D1'), delivery('D2'), delivery('D3')]);
      assert.equal(await total(a, bySeller), 3);
      await a.post('/v1/deliveries/acknowledge', ['D1']);
      assert.equal(await total(a, bySeller), 2, 'an acknowledgement');
      await a.post('/api/deliveries/batch-create', [delivery('D4', { seller_id: 'S2' })]);
      assert.equal(await total(a, bySeller), 2, 'another seller: same count, counted again');
      assert.equal(await total(a, '/v1/deliveries/pending?seller_id=S2'), 1);
    });

    test("a tenant's first rows show, after a filtered total was counted before them", async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const bySeller = '/v1/deliveries/pending?seller_id=S1&limit=1';
      assert.equal(await total(a), 0, 'no customers yet: no row_counts row');
      assert.equal(await total(a, bySeller), 0, 'no deliveries yet');
      await a.post('/api/customers/batch-create', [customer('C1')]);
      await a.post('/api/deliveries/batch-create', [delivery('D1')]);
      assert.equal(await total(a), 1);
      assert.equal(await total(a, bySeller), 1);
    });

    test('an unchanged version is not counted again; each tenant and filter has its own total', async () => {
      const db = await backend.db();
      // Two tenants of one app: one cache of totals.
      const a = await ownedTenantApp(db);
      after(() => a.transport.app.close());
      const b = await ownedTenantApp(db, {}, { app: a.transport.app });
      await a.post('/api/customers/batch-create', [customer('C1'), customer('C2')]);
      await b.post('/api/customers/batch-create', [customer('C1')]);
      assert.equal(await total(a), 2);
      assert.equal(await total(b), 1);
      // A row added with the triggers off leaves the version as it was: the total served is the one
      // counted before, which shows the count was not run again (no API write can do this).
      await db.transaction(async (tx) => {
        await tx.query('SET LOCAL session_replication_role = replica');
        await tx.query(
          `INSERT INTO customers SELECT * FROM json_populate_record(NULL::customers, (
             SELECT (to_jsonb(c) || '{"code": "HIDDEN"}')::json FROM customers c
             WHERE tenant_id = $1 AND code = 'C1'))`,
          [a.tenant.tenantId],
        );
      });
      assert.equal(await total(a), 2, 'served from the kept total');
      assert.equal(
        await total(a, '/v1/customers?created_from=2000-01-02&limit=1'),
        3,
        'another filter counts',
      );
      assert.equal(await total(b), 1, 'another tenant');
      // The next write moves the version: counted again, the hidden row included.
      await a.post('/api/customers/batch-create', [customer('C3')]);
      assert.equal(await total(a), 4);
    });
  });
}
