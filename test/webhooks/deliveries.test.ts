import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { beginDelivery, claimStreams, releaseStream } from '../../src/sql/webhook-streams.js';
import { addressRules } from '../../src/webhooks/addresses.js';
import {
  type DeliverySettings,
  RENUMBERED_REASON,
  RESTORED_REASON,
} from '../../src/webhooks/delivery-work.js';
import { ownedTenantApp } from '../helpers/app.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { customer } from '../helpers/read-data.js';
import {
  deliver,
  dueNow,
  fixedResolver,
  loadCustomers,
  metric,
  privateBackends,
  type Received,
  receiver,
  secondsUntilDue,
  testWebhookSettings,
  until,
} from './webhooks.js';

/*
 * Webhook deliveries (extensions.md 11) to receivers on loopback, each round run by the test (no
 * timer, no sleeping): the feed's records in order, signed (verified by the `standardwebhooks`
 * package), retried with the same webhook-id, 410 and 3 days of failures disabling, resume after
 * disable, rotation's two signatures, replay, ping, the address rule at every connection, one
 * tenant's failing endpoint beside another's healthy one, and a second instance taking over a stream
 * whose holder stopped.
 */

type Tenant = TenantClient<any, InjectTransport>;

async function newApp(db: Database, webhooks: Partial<DeliverySettings> = {}, app?: FastifyInstance) {
  return ownedTenantApp(db, { webhooks: testWebhookSettings(webhooks) }, app ? { app } : undefined);
}

async function register(tenant: Tenant, body: Record<string, unknown>) {
  const response = await tenant.post('/v1/webhooks', { resources: ['customers'], ...body });
  assert.equal(response.status, 201, response.text);
  return response.body as { id: string; secret: string; positions: Record<string, string> };
}

const bodyOf = (received: Received) => JSON.parse(received.body);
const codesOf = (received: Received[]) =>
  received.flatMap((r) => bodyOf(r).data.map((c: { code: string }) => c.code));

/** A cursor's place in the feed (resource, xid, key), without when it was handed out. */
function position(cursor: string) {
  const { t: _t, ...place } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  return place;
}

for (const backend of privateBackends()) {
  describe(`webhook deliveries on ${backend.name}`, () => {
    // The tests share a database and a round claims every due stream in it: each test's endpoints
    // are paused after it, so no later test's round sends them (to receivers that may hang).
    afterEach(async () => {
      await (await backend.db()).query(
        "UPDATE webhook_endpoints SET status = 'paused' WHERE status = 'active'",
      );
    });
    test('changes arrive in feed order, signed, in batches of batch_size, each with its next cursor', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        await loadCustomers(db, tenant, ['OLD1']);
        const endpoint = await register(tenant, { url: url.href, batch_size: 2 });
        await loadCustomers(db, tenant, ['C1', 'C2', 'C3']);
        await loadCustomers(db, tenant, ['C4', 'C5']);
        assert.ok((await metric(app, 'sfa_webhook_oldest_unsent_seconds')) > 0, 'changes wait');
        await deliver(app);
        assert.equal(await metric(app, 'sfa_webhook_oldest_unsent_seconds'), 0, 'every change taken');
        assert.equal(await metric(app, 'sfa_webhook_attempts_total{result="delivered",repeat="false"}'), 3);
        assert.equal(await metric(app, 'sfa_webhook_endpoints{status="active"}'), 1);

        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C3', 'C4', 'C5'], 'from now: OLD1 is not sent');
        assert.deepEqual(
          received.map((r) => bodyOf(r).data.length),
          [2, 2, 1],
        );
        const verifier = new Webhook(endpoint.secret);
        const ids = new Set<string>();
        for (const delivery of received) {
          assert.equal(delivery.headers['content-type'], 'application/json');
          assert.match(String(delivery.headers['user-agent']), /^sfa-backoffice\//);
          assert.match(String(delivery.headers['webhook-id']), /^msg_/);
          ids.add(String(delivery.headers['webhook-id']));
          verifier.verify(delivery.body, delivery.headers as Record<string, string>);
          const body = bodyOf(delivery);
          assert.deepEqual(Object.keys(body), ['type', 'resource', 'data', 'next']);
          assert.equal(body.type, 'changes');
          assert.equal(body.resource, 'customers');
        }
        assert.equal(ids.size, 3, 'each delivery its own id');

        // The records exactly as GET /v1/changes gives them, and each next continues the feed there.
        const feed = await tenant.get(
          `/v1/changes?resource=customers&after=${endpoint.positions.customers}&limit=2`,
        );
        assert.deepEqual(feed.body.data, bodyOf(received[0]!).data);
        assert.deepEqual(position(feed.body.next), position(bodyOf(received[0]!).next));
        const rest = await tenant.get(`/v1/changes?resource=customers&after=${bodyOf(received[2]!).next}`);
        assert.deepEqual(rest.body.data, []);

        // The log, newest first; the endpoint's position moved to the last record.
        const log = await tenant.get(`/v1/webhooks/${endpoint.id}/deliveries`);
        assert.deepEqual(
          log.body.data.map((a: any) => [a.id, a.resource, a.records, a.attempt, a.statusCode, a.error]),
          received
            .map((r) => [r.headers['webhook-id'], 'customers', bodyOf(r).data.length, 1, 204, null])
            .reverse(),
        );
        const shown = await tenant.get(`/v1/webhooks/${endpoint.id}`);
        assert.deepEqual(position(shown.body.positions.customers), position(bodyOf(received[2]!).next));

        // Nothing new: a round sends nothing.
        await deliver(app);
        assert.equal(received.length, 3);
      } finally {
        await app.close();
      }
    });

    test('a failed attempt is repeated with the same webhook-id and records, after its backoff', async () => {
      const db = await backend.db();
      let status = 500;
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = status;
        response.end('details the service never keeps');
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        await loadCustomers(db, tenant, ['C1', 'C2']);
        await deliver(app);
        assert.equal(received.length, 1);
        // Not due yet: the backoff (5 to 10 s for the first repeat) holds it.
        await deliver(app);
        assert.equal(received.length, 1);
        const wait = await secondsUntilDue(db, endpoint.id);
        assert.ok(wait > 4 && wait <= 10, `first repeat within 10 s (${wait})`);
        const shown = await tenant.get(`/v1/webhooks/${endpoint.id}`);
        assert.match(shown.body.failing_since, /^\d{4}-\d{2}-\d{2}T/);

        // A change committed meanwhile does not join the repeat.
        await loadCustomers(db, tenant, ['C3']);
        status = 200;
        await dueNow(db, endpoint.id);
        await deliver(app);
        assert.equal(received.length, 3);
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        assert.equal(JSON.stringify(bodyOf(received[1]!).data), JSON.stringify(bodyOf(received[0]!).data));
        assert.notEqual(received[2]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C1', 'C2', 'C3']);
        const log = await tenant.get(`/v1/webhooks/${endpoint.id}/deliveries?limit=2`);
        assert.deepEqual(
          log.body.data.map((a: any) => [a.records, a.attempt, a.statusCode, a.error]),
          [
            [1, 1, 200, null],
            [2, 2, 200, null],
          ],
        );
        const full = await tenant.get(`/v1/webhooks/${endpoint.id}/deliveries`);
        assert.deepEqual(full.body.data.at(-1).statusCode, 500);
        assert.equal(full.body.data.at(-1).error, 'status 500');
        assert.ok(!full.text.includes('details'), 'the endpoint body is never kept');
        assert.equal((await tenant.get(`/v1/webhooks/${endpoint.id}`)).body.failing_since, null);
        assert.equal(await metric(app, 'sfa_webhook_attempts_total{result="failed",repeat="false"}'), 1);
        assert.equal(await metric(app, 'sfa_webhook_attempts_total{result="delivered",repeat="true"}'), 1);
      } finally {
        await app.close();
      }
    });

    test('a record that changed again before the repeat arrives in its new place, never lost', async () => {
      const db = await backend.db();
      let status = 500;
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = status;
        response.end();
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href, batch_size: 2 });
        await loadCustomers(db, tenant, ['C1', 'C2']);
        await loadCustomers(db, tenant, ['C3']);
        await deliver(app);
        // C1 changes again: it leaves the range of the delivery under way.
        const changed = await tenant.post('/api/customers/batch-create', [
          customer('C1', { name: 'renamed' }),
        ]);
        assert.equal(changed.status, 201);
        await feedCaughtUp(db);
        status = 200;
        await dueNow(db, endpoint.id);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C2', 'C3', 'C1']);
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        assert.equal(bodyOf(received.at(-1)!).data.at(-1).name, 'renamed');
      } finally {
        await app.close();
      }
    });

    test('410 disables at once; set active again, it resumes with the first change not taken', async () => {
      const db = await backend.db();
      let status = 410;
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = status;
        response.end();
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        const disabled = await tenant.get(`/v1/webhooks/${endpoint.id}`);
        assert.equal(disabled.body.status, 'disabled');
        assert.equal(disabled.body.disabled_reason, 'The endpoint answered 410 Gone');
        // Disabled: nothing is sent, whatever is due, and nothing is lost.
        await loadCustomers(db, tenant, ['C2']);
        await dueNow(db, endpoint.id);
        await deliver(app);
        assert.equal(received.length, 1);

        status = 200;
        const resumed = await tenant.send({
          method: 'PATCH',
          path: `/v1/webhooks/${endpoint.id}`,
          headers: { 'content-type': 'application/json' },
          body: '{"status":"active"}',
        });
        assert.equal(resumed.body.status, 'active');
        assert.equal(resumed.body.disabled_reason, null);
        assert.equal(resumed.body.failing_since, null);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C1', 'C2']);
      } finally {
        await app.close();
      }
    });

    test('after 3 days of failed attempts the endpoint is disabled; Retry-After is honoured', async () => {
      const db = await backend.db();
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = 503;
        response.setHeader('retry-after', '120');
        response.end();
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        const wait = await secondsUntilDue(db, endpoint.id);
        assert.ok(wait > 115 && wait <= 120, `Retry-After 120 (${wait})`);
        // Three days of failures, then one more attempt.
        await db.query(
          "UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = $1",
          [endpoint.id],
        );
        await dueNow(db, endpoint.id);
        await deliver(app);
        assert.equal(received.length, 2);
        const shown = await tenant.get(`/v1/webhooks/${endpoint.id}`);
        assert.equal(shown.body.status, 'disabled');
        assert.equal(shown.body.disabled_reason, 'Every attempt failed for 3 days');
        assert.equal(await metric(app, 'sfa_webhook_endpoints{status="disabled"}'), 1);
      } finally {
        await app.close();
      }
    });

    test('paused sends nothing; rotation signs with both secrets; replay sends again from a cursor', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      const patch = (id: string, body: unknown) =>
        tenant.send({
          method: 'PATCH',
          path: `/v1/webhooks/${id}`,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      try {
        const endpoint = await register(tenant, { url: url.href, from: 'start' });
        await patch(endpoint.id, { status: 'paused' });
        await loadCustomers(db, tenant, ['C1', 'C2']);
        await deliver(app);
        assert.equal(received.length, 0);
        await patch(endpoint.id, { status: 'active' });
        const rotated = await tenant.send({
          method: 'POST',
          path: `/v1/webhooks/${endpoint.id}/rotate-secret`,
        });
        await deliver(app);
        assert.equal(received.length, 1);
        const signed = received[0]!;
        assert.equal(String(signed.headers['webhook-signature']).split(' ').length, 2);
        // A receiver with either secret accepts it.
        new Webhook(rotated.body.secret).verify(signed.body, signed.headers as Record<string, string>);
        new Webhook(endpoint.secret).verify(signed.body, signed.headers as Record<string, string>);
        // Once the old secret's 24 hours are over, only the new one signs.
        await db.query(
          "UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second' WHERE id = $1",
          [endpoint.id],
        );
        await loadCustomers(db, tenant, ['C3']);
        await deliver(app);
        assert.equal(String(received[1]!.headers['webhook-signature']).split(' ').length, 1);
        assert.throws(() =>
          new Webhook(endpoint.secret).verify(
            received[1]!.body,
            received[1]!.headers as Record<string, string>,
          ),
        );

        // Replay after the first delivery's cursor: C3 again; without after: everything again.
        const after = bodyOf(received[0]!).next;
        const replayed = await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, {
          resource: 'customers',
          after,
        });
        assert.equal(replayed.status, 202);
        await deliver(app);
        assert.deepEqual(codesOf(received.slice(2)), ['C3']);
        await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, { resource: 'customers' });
        await deliver(app);
        assert.deepEqual(codesOf(received.slice(3)), ['C1', 'C2', 'C3']);
      } finally {
        await app.close();
      }
    });

    test('the log never carries a webhook secret or a signature', async () => {
      const db = await backend.db();
      const lines: string[] = [];
      const { url, received } = await receiver();
      const tenant = await ownedTenantApp(db, {
        webhooks: testWebhookSettings(),
        logLevel: 'debug',
        logStream: { write: (line: string) => lines.push(line) },
      });
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        const rotated = await tenant.send({
          method: 'POST',
          path: `/v1/webhooks/${endpoint.id}/rotate-secret`,
        });
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        await tenant.send({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/ping` });
        assert.equal(received.length, 2);
        const log = lines.join('');
        assert.ok(lines.length > 5, 'the requests were logged');
        for (const secret of [endpoint.secret, rotated.body.secret]) {
          assert.ok(!log.includes(secret.slice('whsec_'.length, 30)), 'no secret in the log');
        }
        for (const delivery of received) {
          for (const signature of String(delivery.headers['webhook-signature']).split(' ')) {
            assert.ok(!log.includes(signature.slice(3, 30)), 'no signature in the log');
          }
        }
      } finally {
        await app.close();
      }
    });

    test('an endpoint deleted while its attempt is in flight ends the turn quietly', async () => {
      const db = await backend.db();
      const held: ServerResponse[] = [];
      const { url, received } = await receiver((_request, response) => {
        held.push(response);
      });
      const lines: string[] = [];
      const tenant = await ownedTenantApp(db, {
        webhooks: testWebhookSettings(),
        logLevel: 'warn',
        logStream: { write: (line: string) => lines.push(line) },
      });
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        await loadCustomers(db, tenant, ['C1']);
        await app.webhookDeliveries.round();
        await until(() => received.length > 0, 'the first delivery arrives');
        const removed = await tenant.send({ method: 'DELETE', path: `/v1/webhooks/${endpoint.id}` });
        assert.equal(removed.status, 204);
        for (const response of held) response.end();
        await app.webhookDeliveries.settled();
        assert.deepEqual(lines, [], 'no turn failed');
        const [{ n }] = (await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1',
          [endpoint.id],
        )) as [{ n: number }];
        assert.equal(n, 0);
      } finally {
        for (const response of held) if (!response.writableEnded) response.end();
        await app.close();
      }
    });

    test('a rotation during a turn signs its next delivery with both secrets', async () => {
      const db = await backend.db();
      let rotated: string | undefined;
      let rotate: () => Promise<string> = async () => '';
      const { url, received } = await receiver((_request, response) => {
        // The first delivery rotates the secret before it answers: the turn goes on to the second.
        if (rotated !== undefined) return void response.writeHead(204).end();
        void rotate().then((secret) => {
          rotated = secret;
          response.writeHead(204).end();
        });
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href, batch_size: 1 });
        rotate = async () =>
          (await tenant.send({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/rotate-secret` })).body
            .secret;
        await loadCustomers(db, tenant, ['C1', 'C2']);
        await app.webhookDeliveries.round();
        await app.webhookDeliveries.settled();
        assert.equal(received.length, 2, 'both in one turn');
        assert.equal(String(received[1]!.headers['webhook-signature']).split(' ').length, 2);
        new Webhook(rotated!).verify(received[1]!.body, received[1]!.headers as Record<string, string>);
      } finally {
        await app.close();
      }
    });

    test('a turn lets its stream go after maxTurnMs; a replay between read and begin is not undone', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await newApp(db, { maxTurnMs: 0 });
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href, batch_size: 1 });
        await loadCustomers(db, tenant, ['C1', 'C2', 'C3']);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1'], 'one delivery, then the stream goes back');
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C2']);

        // A turn that read its page before a replay cannot record its delivery after it.
        const [claimed] = await claimStreams(db, 'test-holder', 1, [], 25);
        assert.ok(claimed, 'C3 is due');
        const replayed = await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, { resource: 'customers' });
        assert.equal(replayed.status, 202);
        const begun = await beginDelivery(
          db,
          claimed,
          'test-holder',
          { id: 'msg_stale', xid: '1', key: ['C3'], count: 1, t: '1' },
          25,
        );
        assert.equal(begun, false);
        await releaseStream(db, claimed, 'test-holder');
        await deliver(app);
        await deliver(app);
        await deliver(app);
        assert.deepEqual(
          codesOf(received),
          ['C1', 'C2', 'C1', 'C2', 'C3'],
          'the replay from the start holds',
        );
      } finally {
        await app.close();
      }
    });

    test('a position the feed no longer holds disables the endpoint with the reason, never skips', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        // Renumbered: the stream's position is of another generation of the feed's numbering.
        const renumbered = await register(tenant, { url: url.href });
        await db.query('UPDATE webhook_streams SET generation = generation + 1 WHERE endpoint_id = $1', [
          renumbered.id,
        ]);
        // Restored: rows behind the position changed after it was handed out (as after a restore of
        // the database to an earlier point, src/sql/changes.ts).
        const restored = await register(tenant, { url: url.href, from: 'start' });
        await loadCustomers(db, tenant, ['C1', 'C2']);
        const [first] = await db.query<{ xid: string; code: string }>(
          'SELECT change_xid::text AS xid, code FROM customers WHERE tenant_id = $1 ORDER BY change_xid, code LIMIT 1',
          [tenant.tenant.tenantId],
        );
        await db.query(
          'UPDATE webhook_streams SET position_xid = $2::xid8, position_key = ARRAY[$3], position_t = 1 WHERE endpoint_id = $1',
          [restored.id, first!.xid, first!.code],
        );
        await deliver(app);
        assert.equal(received.length, 0, 'nothing sent from a position the feed does not hold');
        const shown = async (id: string) => (await tenant.get(`/v1/webhooks/${id}`)).body;
        assert.equal((await shown(renumbered.id)).status, 'disabled');
        assert.equal((await shown(renumbered.id)).disabled_reason, RENUMBERED_REASON);
        assert.equal((await shown(restored.id)).status, 'disabled');
        assert.equal((await shown(restored.id)).disabled_reason, RESTORED_REASON);
        // A replay from the start is the way on.
        await tenant.post(`/v1/webhooks/${restored.id}/replay`, { resource: 'customers' });
        await tenant.send({
          method: 'PATCH',
          path: `/v1/webhooks/${restored.id}`,
          headers: { 'content-type': 'application/json' },
          body: '{"status":"active"}',
        });
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C2']);
      } finally {
        await app.close();
      }
    });

    test('ping sends one signed delivery now and tells what the endpoint answered', async () => {
      const db = await backend.db();
      const { url, received } = await receiver((_request, response) => {
        response.statusCode = 202;
        response.end();
      });
      const tenant = await newApp(db);
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: url.href });
        const pinged = await tenant.send({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/ping` });
        assert.equal(pinged.status, 200, pinged.text);
        assert.deepEqual({ ...pinged.body, durationMs: 0 }, { statusCode: 202, error: null, durationMs: 0 });
        assert.equal(received.length, 1);
        assert.deepEqual(bodyOf(received[0]!), { type: 'ping', webhook: endpoint.id });
        new Webhook(endpoint.secret).verify(
          received[0]!.body,
          received[0]!.headers as Record<string, string>,
        );
      } finally {
        await app.close();
      }
    });

    test('a name that resolves inside at connection time is refused there: "address not allowed"', async () => {
      const db = await backend.db();
      const answers: Record<string, string[]> = { 'erp.example.com': ['93.184.216.34'] };
      const tenant = await newApp(db, { rules: addressRules(), resolve: fixedResolver(answers) });
      const app = tenant.transport.app;
      try {
        const endpoint = await register(tenant, { url: 'https://erp.example.com/hooks' });
        answers['erp.example.com'] = ['127.0.0.1'];
        await loadCustomers(db, tenant, ['C1']);
        await deliver(app);
        const log = await tenant.get(`/v1/webhooks/${endpoint.id}/deliveries`);
        assert.equal(log.body.data.length, 1);
        assert.equal(log.body.data[0].error, 'address not allowed');
        assert.equal(log.body.data[0].statusCode, null);
        const pinged = await tenant.send({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/ping` });
        assert.equal(pinged.body.error, 'address not allowed');
      } finally {
        await app.close();
      }
    });

    test("one tenant's endpoint that never answers delays no other tenant's deliveries", async () => {
      const db = await backend.db();
      const held: ServerResponse[] = [];
      const slow = await receiver((_request, response) => {
        held.push(response);
      });
      const healthy = await receiver();
      const a = await newApp(db, { timeoutMs: 60_000 });
      const app = a.transport.app;
      const b = await newApp(db, {}, app);
      try {
        await register(a, { url: slow.url.href });
        await register(b, { url: healthy.url.href });
        await loadCustomers(db, a, ['A1']);
        await loadCustomers(db, b, ['B1']);
        await app.webhookDeliveries.round();
        // B's delivery arrives while A's attempt still waits for an answer.
        await until(
          () => healthy.received.length > 0,
          "B's delivery arrives",
          // A pause between rounds, so that B's turn gets the embedded engine's one connection.
          async () => {
            await new Promise((done) => setTimeout(done, 5));
            await app.webhookDeliveries.round();
          },
        );
        assert.deepEqual(codesOf(healthy.received), ['B1']);
        assert.equal(slow.received.length, 1);
        // B's turn ends (its last statements), A's goes on waiting.
        await until(() => app.webhookDeliveries.turns <= 1, "B's turn ends");
        assert.equal(app.webhookDeliveries.turns, 1, "only A's turn is still running");
        for (const response of held) response.end();
        await app.webhookDeliveries.settled();
      } finally {
        for (const response of held) if (!response.writableEnded) response.end();
        await app.close();
      }
    });

    test('another instance takes over a stream whose holder stopped, with the same webhook-id', async () => {
      const db = await backend.db();
      const held: ServerResponse[] = [];
      let hold = true;
      const { url, received } = await receiver((_request, response) => {
        if (hold) held.push(response);
        else {
          response.statusCode = 200;
          response.end();
        }
      });
      const first = await newApp(db, { timeoutMs: 60_000 });
      const second = await newApp(db, {}, undefined);
      try {
        const endpoint = await register(first, { url: url.href });
        await loadCustomers(db, first, ['C1', 'C2']);
        await first.transport.app.webhookDeliveries.round();
        await until(() => received.length > 0, 'the first delivery arrives');
        assert.equal(received.length, 1);
        // The first instance holds the stream: the second finds nothing to claim.
        await deliver(second.transport.app);
        assert.equal(received.length, 1);
        // The first instance stalls past its lease (as if killed): the lease expires.
        await db.query(
          "UPDATE webhook_streams SET held_until = now() - interval '1 second' WHERE endpoint_id = $1",
          [endpoint.id],
        );
        hold = false;
        await deliver(second.transport.app);
        assert.equal(received.length, 2);
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        // The stalled attempt ends late: what it records changes nothing.
        for (const response of held) {
          response.statusCode = 200;
          response.end();
        }
        await first.transport.app.webhookDeliveries.settled();
        await loadCustomers(db, first, ['C3']);
        await deliver(second.transport.app);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C1', 'C2', 'C3']);
        const log = await first.get(`/v1/webhooks/${endpoint.id}/deliveries`);
        assert.equal(log.body.data.length, 3);
      } finally {
        for (const response of held) if (!response.writableEnded) response.end();
        await first.transport.app.close();
        await second.transport.app.close();
      }
    });
  });
}
