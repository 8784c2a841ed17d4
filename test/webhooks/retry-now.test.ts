import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import { ownedTenantApp } from '../helpers/app.js';
import {
  deliver,
  loadCustomers,
  privateBackends,
  receiver,
  secondsUntilDue,
  testWebhookSettings,
} from './webhooks.js';

/*
 * POST /v1/webhooks/{id}/retry (extensions.md 11, continued; docs/decisions/0137-webhook-retry-now.md):
 * a receiver down for a few attempts comes back, and after a retry its next delivery goes at the next
 * round instead of at its backoff's time. Every round is run by the test; the backoff is read from the
 * database and never waited out, and the request's wake-up of the delivery work is seen by replacing
 * the app's nudge. Nothing sleeps, nothing is timed.
 */

type Tenant = TenantClient<any, InjectTransport>;

const retry = (tenant: Tenant, id: string) =>
  tenant.send({ method: 'POST', path: `/v1/webhooks/${id}/retry` });

for (const backend of privateBackends()) {
  describe(`POST /v1/webhooks/{id}/retry on ${backend.name}`, () => {
    // A round claims every due stream of the database: each test's endpoints are paused after it.
    afterEach(async () => {
      await (await backend.db()).query(
        "UPDATE webhook_endpoints SET status = 'paused' WHERE status = 'active'",
      );
    });
    test('a receiver back after a few failures gets the delivery at the next round, not at its backoff', async () => {
      const db = await backend.db();
      let up = false;
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = up ? 204 : 503;
        response.end();
      });
      const tenant = await ownedTenantApp(db, { webhooks: testWebhookSettings() });
      const app = tenant.transport.app;
      const nudged: string[] = [];
      app.background.nudge = (name: string) => void nudged.push(name);
      try {
        const created = await tenant.post('/v1/webhooks', { url: url.href, resources: ['customers'] });
        assert.equal(created.status, 201, created.text);
        const id = created.body.id as string;
        await loadCustomers(db, tenant, ['C1', 'C2']);

        // Three failed attempts, each made due by moving its time, as the backoff test does.
        for (let attempt = 1; attempt <= 3; attempt++) {
          await deliver(app);
          assert.equal(received.length, attempt);
          if (attempt < 3) {
            await db.query('UPDATE webhook_streams SET next_attempt_at = now() WHERE endpoint_id = $1', [id]);
          }
        }
        // The receiver is back; its delivery waits its backoff (30 s at the fixed jitter): a round sends nothing.
        up = true;
        assert.ok((await secondsUntilDue(db, id)) > 20, 'the fourth attempt waits its backoff');
        await deliver(app);
        assert.equal(received.length, 3, 'nothing is sent before the backoff is over');

        const answer = await retry(tenant, id);
        assert.equal(answer.status, 202, answer.text);
        assert.deepEqual(answer.body, { statusCode: 202, message: 'Retry scheduled' });
        assert.deepEqual(nudged, ['webhook-deliveries'], 'the delivery work is woken at once');
        assert.ok((await secondsUntilDue(db, id)) <= 0, 'due now');

        await deliver(app);
        assert.equal(received.length, 4, 'the next round sends it');
        const [last, first] = [received.at(-1)!, received[0]!];
        assert.equal(last.headers['webhook-id'], first.headers['webhook-id'], 'the same delivery');
        assert.deepEqual(
          JSON.parse(last.body).data.map((record: { code: string }) => record.code),
          ['C1', 'C2'],
        );
        const shown = await tenant.get(`/v1/webhooks/${id}`);
        assert.equal(shown.body.status, 'active');
        assert.equal(shown.body.failing_since, null, 'taken: no longer failing');

        // Nothing waiting: 202 all the same, and nothing is sent.
        const idle = await retry(tenant, id);
        assert.equal(idle.status, 202, idle.text);
        await deliver(app);
        assert.equal(received.length, 4);
      } finally {
        await app.close();
      }
    });

    test('a retry that fails too waits the next step of the backoff, not the first again', async () => {
      const db = await backend.db();
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = 500;
        response.end();
      });
      const tenant = await ownedTenantApp(db, { webhooks: testWebhookSettings() });
      const app = tenant.transport.app;
      try {
        const { body: created } = await tenant.post('/v1/webhooks', {
          url: url.href,
          resources: ['customers'],
        });
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        assert.ok((await secondsUntilDue(db, created.id)) <= 7.5);
        assert.equal((await retry(tenant, created.id)).status, 202);
        await deliver(app);
        assert.equal(received.length, 2);
        const wait = await secondsUntilDue(db, created.id);
        assert.ok(wait > 10 && wait <= 15, `the second failure waits 15 s at the fixed jitter (${wait})`);
      } finally {
        await app.close();
      }
    });

    test('a disabled endpoint becomes active first; a paused one stays paused; an unknown id is 404', async () => {
      const db = await backend.db();
      let status = 410;
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = status;
        response.end();
      });
      const tenant = await ownedTenantApp(db, { webhooks: testWebhookSettings() });
      const app = tenant.transport.app;
      try {
        const { body: created } = await tenant.post('/v1/webhooks', {
          url: url.href,
          resources: ['customers'],
        });
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        const disabled = await tenant.get(`/v1/webhooks/${created.id}`);
        assert.equal(disabled.body.status, 'disabled');

        status = 204;
        assert.equal((await retry(tenant, created.id)).status, 202);
        const active = await tenant.get(`/v1/webhooks/${created.id}`);
        assert.equal(active.body.status, 'active');
        assert.equal(active.body.disabled_reason, null);
        assert.equal(active.body.failing_since, null);
        await deliver(app);
        assert.equal(received.length, 2, 'the delivery under way goes again');
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);

        const paused = await tenant.send({
          method: 'PATCH',
          path: `/v1/webhooks/${created.id}`,
          headers: { 'content-type': 'application/json' },
          body: '{"status":"paused"}',
        });
        assert.equal(paused.status, 200, paused.text);
        assert.equal((await retry(tenant, created.id)).status, 202);
        assert.equal((await tenant.get(`/v1/webhooks/${created.id}`)).body.status, 'paused');

        const unknown = await retry(tenant, 'wh_000000000000000000000000');
        assert.equal(unknown.status, 404);
        assert.deepEqual(unknown.body, {
          statusCode: 404,
          errors: [{ message: 'Webhook endpoint not found' }],
        });
      } finally {
        await app.close();
      }
    });
  });
}
