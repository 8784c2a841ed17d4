import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seedDemoData } from '../src/demo/seed-demo.js';
import { backends, newTenant } from './helpers/backends.js';

for (const backend of backends()) {
  describe(`demo data on ${backend.name}`, () => {
    test('loads through the batch pipeline and fills every table the API reads or refers to', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      await seedDemoData(db, tenantId);
      const [counts] = await db.query<Record<string, number>>(
        `SELECT ${[
          'products',
          'stocks',
          'prices',
          'factors',
          'payment_methods',
          'users',
          'routes',
          'customers',
          'deliveries',
          'delivery_items',
        ]
          .map((t) => `(SELECT count(*) FROM ${t} WHERE tenant_id = $1)::int AS ${t}`)
          .join(', ')}`,
        [tenantId],
      );
      for (const [table, count] of Object.entries(counts!)) assert.ok(count > 0, `${table} has demo rows`);
      const [pending] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM deliveries WHERE tenant_id = $1 AND acknowledged_at IS NULL',
        [tenantId],
      );
      assert.equal(pending!.n, 2);
    });
  });
}
