import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { ownedTenantApp } from '../helpers/app.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { customer } from '../helpers/read-data.js';
import { privateBackends, receiver, testWebhookSettings } from './webhooks.js';

/*
 * The backoff of one delivery failing again and again grows (src/webhooks/retry-schedule.ts,
 * extensions.md 11: the first repeat within 10 seconds, then growing): each failure waits twice the
 * step of the one before. The test app's jitter is fixed at 0.5 (testWebhookSettings), so each wait is
 * three quarters of its step: 7.5 s before attempt 2, 15 s before attempt 3, 30 s before attempt 4.
 * Each wait is read from the database (when the stream is due, less when its failure was logged,
 * one statement's now()), and then moved back to now instead of waited out.
 */

const EXPECTED_WAITS = [7.5, 15, 30];

/** Seconds from the endpoint's latest logged attempt to when its stream is due again. */
async function scheduledWait(db: Database, endpointId: string): Promise<number> {
  const [row] = await db.query<{ wait: number | null }>(
    `SELECT extract(epoch FROM s.next_attempt_at - (
       SELECT max(a.attempted_at) FROM webhook_attempts a WHERE a.endpoint_id = s.endpoint_id))::float8 AS wait
     FROM webhook_streams s WHERE s.endpoint_id = $1`,
    [endpointId],
  );
  assert.ok(row && row.wait !== null, `no stream or no attempt logged for endpoint ${endpointId}`);
  return row.wait;
}

for (const backend of privateBackends()) {
  describe(`the retry backoff of a failing delivery on ${backend.name}`, () => {
    test('three failed attempts of one delivery wait 7.5, 15 and 30 seconds: the schedule grows', async () => {
      const db = await backend.db();
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = 500;
        response.end();
      });
      const tenant = await ownedTenantApp(db, { webhooks: testWebhookSettings() });
      const app = tenant.transport.app;
      try {
        const registered = await tenant.post('/v1/webhooks', { url: url.href, resources: ['customers'] });
        assert.equal(registered.status, 201, `endpoint not registered: ${registered.text}`);
        const id = registered.body.id as string;
        const loaded = await tenant.post('/api/customers/batch-create', [customer('C1')]);
        assert.equal(loaded.status, 201, `customer not loaded: ${loaded.text}`);
        await feedCaughtUp(db);

        const waits: number[] = [];
        for (let attempt = 1; attempt <= EXPECTED_WAITS.length; attempt++) {
          await app.webhookDeliveries.round();
          await app.webhookDeliveries.settled();
          assert.equal(received.length, attempt, `attempt ${attempt} did not reach the receiver`);
          waits.push(await scheduledWait(db, id));
          // Not due yet: a round sends nothing before the wait is over.
          await app.webhookDeliveries.round();
          await app.webhookDeliveries.settled();
          assert.equal(received.length, attempt, `attempt ${attempt + 1} was sent before its wait was over`);
          // The wait moved back to now, so the next round makes the next attempt.
          await db.query('UPDATE webhook_streams SET next_attempt_at = now() WHERE endpoint_id = $1', [id]);
        }
        assert.deepEqual(
          waits.map((wait) => Math.round(wait * 1000) / 1000),
          EXPECTED_WAITS,
          `the waits before attempts 2, 3 and 4 were ${waits.join(', ')} s, not ${EXPECTED_WAITS.join(', ')}`,
        );

        // One delivery, attempted three times: the same webhook-id, the attempts numbered 1 to 3.
        const ids = new Set(received.map((delivery) => delivery.headers['webhook-id']));
        assert.equal(ids.size, 1, `the repeats were not of one delivery: ${[...ids].join(', ')}`);
        const log = await tenant.get(`/v1/webhooks/${id}/deliveries`);
        assert.equal(log.status, 200, `deliveries log not read: ${log.text}`);
        assert.deepEqual(
          log.body.data.map((a: { attempt: number; statusCode: number }) => [a.attempt, a.statusCode]),
          [
            [3, 500],
            [2, 500],
            [1, 500],
          ],
          `the log does not show attempts 1 to 3 failing: ${log.text}`,
        );
      } finally {
        await app.close();
      }
    });
  });
}
