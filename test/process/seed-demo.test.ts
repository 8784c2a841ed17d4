import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seedDemoData } from '../../src/demo/seed-demo.js';
import { batchResources } from '../../src/resources/index.js';
import { backends, newTenant } from '../helpers/backends.js';

/** Every table a batch endpoint loads, children (delivery_items) included: each must have demo rows. */
const tables = batchResources.flatMap((resource) =>
  resource.children ? [resource.table, resource.children.table] : [resource.table],
);

for (const backend of backends()) {
  describe(`demo data on ${backend.name}`, () => {
    test('loads through the batch pipeline and fills every table the API reads or refers to', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      await seedDemoData(db, tenantId);
      const [counts] = await db.query<Record<string, number>>(
        `SELECT ${tables
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
