import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { batchResources } from '../../src/resources/index.js';
import { OVERVIEW_HOURS } from '../../src/sql/overview.js';
import { parseNetworks } from '../../src/webhooks/addresses.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { EVERY_BATCH_ENDPOINT, REFERRED } from '../helpers/batch-items.js';
import { postEmpty } from '../helpers/jobs.js';
import { delivery } from '../helpers/read-data.js';

/*
 * GET /v1/overview (extensions.md 14): rows per resource and records written per hour, kept by the
 * writes as they commit, checked here against what count(*) finds after every kind of write.
 */

/** What count(*) finds per resource table for the tenant. */
async function countedRows(db: Database, tenantId: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const resource of batchResources) {
    const [row] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${resource.table} WHERE tenant_id = $1`,
      [tenantId],
    );
    counts[resource.name] = row!.n;
  }
  return counts;
}

for (const backend of backends()) {
  describe(`GET /v1/overview on ${backend.name}`, () => {
    test('rows per resource, deliveries, jobs, endpoints and the hourly series, as the writes left them', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db, { webhookAllowedNetworks: parseNetworks('127.0.0.0/8') });
      const b = await appForNewTenant(db);

      const empty = await a.get('/v1/overview');
      assert.equal(empty.status, 200, empty.text);
      assert.deepEqual(Object.values(empty.body.rows), Array(batchResources.length).fill(0));
      assert.equal(empty.body.written_per_hour.hours.length, OVERVIEW_HOURS);

      // Every resource: new rows, then the same items again, which change no row and write nothing.
      await a.post('/api/products/batch-create', [{ code: REFERRED, description: 'referred' }]);
      const expectedWritten: Record<string, number> = { products: 1 };
      for (const endpoint of EVERY_BATCH_ENDPOINT) {
        const items = [0, 1, 2].map((n) => endpoint.valid(n));
        for (const round of [1, 2]) {
          const answer = await a.post(endpoint.path, items);
          assert.equal(answer.status, 201, `${endpoint.name} ${answer.text}`);
          if (round === 1) assert.equal(answer.body.created, 3, endpoint.name);
        }
        expectedWritten[endpoint.name] = (expectedWritten[endpoint.name] ?? 0) + 3;
      }
      // An upsert that changes a row writes it.
      const changed = await a.post('/api/products/batch-create', [
        { code: REFERRED, description: 'changed' },
      ]);
      assert.equal(changed.body.updated, 1);
      expectedWritten.products! += 1;
      await b.post('/api/products/batch-create', [{ code: 'THEIRS', description: 'b' }]);
      await a.post('/api/deliveries/batch-create', [delivery('OV-1'), delivery('OV-2'), delivery('OV-3')]);
      expectedWritten.deliveries! += 3;
      await a.post('/v1/deliveries/acknowledge', ['OV-1']);
      await a.post('/v1/deliveries/reject', [
        { code: 'OV-2', reason: 'no stock' },
        { code: 'OV-3', reason: 'closed' },
      ]);
      await a.post('/v1/deliveries/requeue', ['OV-3']);
      // The acknowledgement, the rejection and the requeue wrote 1, 2 and 1 deliveries.
      expectedWritten.deliveries! += 4;
      const job = await a.post('/v1/jobs', { resource: 'prices', format: 'csv' });
      assert.equal(job.status, 201);
      const hook = await a.post('/v1/webhooks', { url: 'http://127.0.0.1:9/h', resources: ['products'] });
      assert.equal(hook.status, 201, hook.text);
      const paused = await a.send({
        method: 'PATCH',
        path: `/v1/webhooks/${hook.body.id}`,
        headers: { 'content-type': 'application/json' },
        body: '{"status":"paused"}',
      });
      assert.equal(paused.status, 200, paused.text);
      await a.post('/v1/webhooks', { url: 'http://127.0.0.1:9/i', resources: ['prices'] });
      const aborted = await postEmpty(a, `/v1/jobs/${job.body.id}/abort`);
      assert.equal(aborted.status, 200, aborted.text);

      const overview = await a.get('/v1/overview');
      assert.equal(overview.status, 200, overview.text);
      const body = overview.body;
      assert.deepEqual(body.rows, await countedRows(db, a.tenant.tenantId));
      const [pending] = await db.query<{ pending: number; rejected: number }>(
        `SELECT count(*) FILTER (WHERE acknowledged_at IS NULL AND rejected_at IS NULL)::int AS pending,
                count(*) FILTER (WHERE acknowledged_at IS NULL AND rejected_at IS NOT NULL)::int AS rejected
         FROM deliveries WHERE tenant_id = $1`,
        [a.tenant.tenantId],
      );
      assert.deepEqual(body.deliveries, pending);
      assert.deepEqual(body.jobs, { open: 0, running: 0, failed_last_7_days: 0, succeeded_last_7_days: 0 });
      assert.deepEqual(body.webhooks, { active: 1, failing: 0, paused: 1, disabled: 0 });

      // The series: 168 UTC hours, the current one last, holding every record written above.
      const { hours, resources } = body.written_per_hour;
      assert.equal(hours.length, OVERVIEW_HOURS);
      const [now] = await db.query<{ hour: string }>(
        `SELECT to_char(date_trunc('hour', now(), 'UTC') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS hour`,
      );
      assert.equal(hours.at(-1), now!.hour);
      assert.equal(new Date(`${hours[1]}Z`).getTime() - new Date(`${hours[0]}Z`).getTime(), 3_600_000);
      const lastHour = Object.fromEntries(
        Object.entries(resources as Record<string, number[]>).map(([name, series]) => {
          assert.equal(series.length, OVERVIEW_HOURS, name);
          assert.ok(
            series.slice(0, -2).every((n) => n === 0),
            `${name}: nothing written before`,
          );
          // A write near the turn of the hour may land in the one before.
          return [name, series.at(-1)! + series.at(-2)!];
        }),
      );
      assert.deepEqual(lastHour, expectedWritten);

      // Another tenant sees only its own.
      const theirs = await b.get('/v1/overview');
      assert.equal(theirs.body.rows.products, 1);
      assert.equal(theirs.body.rows.customers, 0);
      assert.equal(
        theirs.body.written_per_hour.resources.products.at(-1) +
          theirs.body.written_per_hour.resources.products.at(-2),
        1,
      );
      assert.deepEqual(theirs.body.webhooks, { active: 0, failing: 0, paused: 0, disabled: 0 });

      const refused = await a.get('/v1/overview?days=30');
      assert.equal(refused.status, 400);
      assert.equal(refused.body.errors[0].field, 'days');
      assert.equal((await a.transport.send({ path: '/v1/overview' })).status, 401);
    });

    test('rows deleted by hand are uncounted too (the DELETE trigger); slots and appended counts fold', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      await a.post('/api/products/batch-create', [
        { code: 'D1', description: 'x' },
        { code: 'D2', description: 'y' },
      ]);
      await db.query("DELETE FROM products WHERE tenant_id = $1 AND code = 'D1'", [a.tenant.tenantId]);
      const overview = await a.get('/v1/overview');
      assert.equal(overview.body.rows.products, 1);

      // The expiry sweep folds each session's slot into one row per resource, and the fold the counts
      // the batches appended: one row, the count unchanged.
      await db.query("DELETE FROM leases WHERE name IN ('idempotency-expiry', 'written-counts-fold')");
      await a.transport.app.background.runRound('idempotency-expiry');
      await a.transport.app.background.runRound('written-counts-fold');
      const slots = await db.query<{ slot: number; n: string }>(
        "SELECT slot, n::text FROM resource_rows WHERE tenant_id = $1 AND resource = 'products'",
        [a.tenant.tenantId],
      );
      assert.deepEqual(slots, [{ slot: 0, n: '1' }]);
      assert.equal((await a.get('/v1/overview')).body.rows.products, 1);
    });
  });
}
