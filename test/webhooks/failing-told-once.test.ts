import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { ownedTenantApp } from '../helpers/app.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { customer } from '../helpers/read-data.js';
import { deliver, dueNow, metric, privateBackends, receiver, testWebhookSettings } from './webhooks.js';

/*
 * An endpoint that starts failing, and one that is disabled, is told once (extensions.md 11,
 * continued; docs/decisions/0138-webhook-transitions-told-once.md): one warning with its id and the
 * attempt's error, never its URL or secret, and one count in sfa_webhook_endpoint_changes_total, on
 * the failure that made it so and not on the failures after it. Rounds are run by the test; the
 * backoff and the three days are moved in the database, never waited for.
 */

interface LogLine {
  level: number;
  msg: string;
  webhook?: string;
  error?: string;
  reason?: string;
  statusCode?: number;
}

for (const backend of privateBackends()) {
  describe(`failing and disabled webhook endpoints, told once, on ${backend.name}`, () => {
    afterEach(async () => {
      await (await backend.db()).query(
        "UPDATE webhook_endpoints SET status = 'paused' WHERE status = 'active'",
      );
    });

    test('one warning and one count when it starts failing, one more when disabled; none per attempt', async () => {
      const db = await backend.db();
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = 503;
        response.end();
      });
      const lines: string[] = [];
      const tenant = await ownedTenantApp(db, {
        webhooks: testWebhookSettings(),
        logLevel: 'warn',
        logStream: { write: (line: string) => lines.push(line) },
      });
      const app = tenant.transport.app;
      const warnings = () =>
        lines
          .map((line) => JSON.parse(line) as LogLine)
          .filter((line) => line.msg.startsWith('webhook endpoint'));
      try {
        // Two resources failing: the endpoint starts failing once, whichever stream fails first.
        const hookUrl = `${url.href}?token=not-for-the-log`;
        const created = await tenant.post('/v1/webhooks', {
          url: hookUrl,
          resources: ['customers', 'products'],
        });
        assert.equal(created.status, 201, created.text);
        const { id, secret } = created.body as { id: string; secret: string };
        const loaded = await tenant.post('/api/customers/batch-create', [customer('C1')]);
        assert.equal(loaded.status, 201, loaded.text);
        const products = await tenant.post('/api/products/batch-create', [
          { code: 'P1', description: 'Bolt' },
        ]);
        assert.equal(products.status, 201, products.text);
        await feedCaughtUp(db);

        for (let attempt = 1; attempt <= 3; attempt++) {
          await deliver(app);
          await dueNow(db, id);
        }
        assert.equal(received.length, 6, 'three attempts of each resource');
        assert.deepEqual(
          warnings().map(({ level, msg, webhook, error, statusCode }) => ({
            level,
            msg,
            webhook,
            error,
            statusCode,
          })),
          [
            {
              level: 40,
              msg: 'webhook endpoint started failing',
              webhook: id,
              error: 'status 503',
              statusCode: 503,
            },
          ],
        );
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="failing"}'), 1);
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="disabled"}'), 0);

        // A minute short of three days: still only failing.
        await db.query(
          "UPDATE webhook_endpoints SET failing_since = now() - interval '3 days' + interval '1 minute' WHERE id = $1",
          [id],
        );
        await deliver(app);
        assert.equal((await tenant.get(`/v1/webhooks/${id}`)).body.status, 'active');
        assert.equal(warnings().length, 1);

        // Three days: the next failure disables it, told once; the other stream's failure adds nothing.
        await db.query(
          "UPDATE webhook_endpoints SET failing_since = now() - interval '3 days' WHERE id = $1",
          [id],
        );
        await dueNow(db, id);
        await deliver(app);
        const shown = await tenant.get(`/v1/webhooks/${id}`);
        assert.equal(shown.body.status, 'disabled');
        assert.equal(shown.body.disabled_reason, 'Every attempt failed for 3 days');
        const [, disabled, ...more] = warnings();
        assert.deepEqual(more, [], 'told once');
        assert.equal(disabled!.msg, 'webhook endpoint disabled');
        assert.equal(disabled!.webhook, id);
        assert.equal(disabled!.reason, 'Every attempt failed for 3 days');
        assert.equal(disabled!.error, 'status 503');
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="failing"}'), 1);
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="disabled"}'), 1);

        // Active again (retry), failing again: told again, as a new transition.
        assert.equal((await tenant.send({ method: 'POST', path: `/v1/webhooks/${id}/retry` })).status, 202);
        await deliver(app);
        assert.equal(warnings().length, 3);
        assert.equal(warnings()[2]!.msg, 'webhook endpoint started failing');
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="failing"}'), 2);

        const log = lines.join('');
        assert.ok(!log.includes('not-for-the-log'), 'never the URL (its query string may hold a token)');
        assert.ok(!log.includes(secret.slice('whsec_'.length, 30)), 'never the secret');
      } finally {
        await app.close();
      }
    });

    test('410 disables at once: told as failing and as disabled, with the reason', async () => {
      const db = await backend.db();
      const { url } = await receiver((_request, response) => {
        response.statusCode = 410;
        response.end();
      });
      const lines: string[] = [];
      const tenant = await ownedTenantApp(db, {
        webhooks: testWebhookSettings(),
        logLevel: 'warn',
        logStream: { write: (line: string) => lines.push(line) },
      });
      const app = tenant.transport.app;
      try {
        const { body: created } = await tenant.post('/v1/webhooks', {
          url: url.href,
          resources: ['customers'],
        });
        const loaded = await tenant.post('/api/customers/batch-create', [customer('C1')]);
        assert.equal(loaded.status, 201, loaded.text);
        await feedCaughtUp(db);
        await deliver(app);
        const told = lines
          .map((line) => JSON.parse(line) as LogLine)
          .map(({ msg, webhook, reason }) => ({ msg, webhook, reason }));
        assert.deepEqual(told, [
          { msg: 'webhook endpoint started failing', webhook: created.id, reason: undefined },
          { msg: 'webhook endpoint disabled', webhook: created.id, reason: 'The endpoint answered 410 Gone' },
        ]);
        assert.equal(await metric(app, 'sfa_webhook_endpoint_changes_total{to="disabled"}'), 1);
      } finally {
        await app.close();
      }
    });
  });
}
