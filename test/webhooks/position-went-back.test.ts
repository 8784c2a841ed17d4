import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { type DeliverySettings, wentBackReason } from '../../src/webhooks/delivery-work.js';
import { ownedTenantApp } from '../helpers/app.js';
import {
  deliver,
  loadCustomers,
  metric,
  privateBackends,
  type Received,
  receiver,
  testWebhookSettings,
} from './webhooks.js';

/*
 * A stream's stored position behind the one its instance committed as delivered, with no replay
 * since, is history the database lost (an asynchronous standby promoted, a restore: issue #41;
 * docs/decisions/0146-webhook-position-went-back.md): the endpoint is disabled with the reason and
 * nothing is sent again under new webhook-ids. The fault is injected as a restore would leave it: the
 * stream's row set back, by SQL, to the position an earlier delivery stored. A replay moves a stream
 * back on purpose, and another instance moves it forward: neither is a loss.
 */

type Tenant = TenantClient<any, InjectTransport>;

interface LogLine {
  msg: string;
  webhook?: string;
  reason?: string;
}

/** An app whose warnings the test reads. */
async function newApp(db: Database, webhooks: Partial<DeliverySettings> = {}) {
  const lines: string[] = [];
  const tenant = await ownedTenantApp(db, {
    webhooks: testWebhookSettings(webhooks),
    logLevel: 'warn',
    logStream: { write: (line: string) => lines.push(line) },
  });
  const warnings = () =>
    lines.map((line) => JSON.parse(line) as LogLine).filter((line) => line.msg.startsWith('webhook'));
  return { tenant, app: tenant.transport.app, warnings };
}

async function register(tenant: Tenant, url: URL, batchSize: number) {
  const response = await tenant.post('/v1/webhooks', {
    resources: ['customers'],
    url: url.href,
    batch_size: batchSize,
  });
  assert.equal(response.status, 201, response.text);
  return response.body as { id: string };
}

const bodyOf = (received: Received) => JSON.parse(received.body);
const codesOf = (received: Received[]) =>
  received.flatMap((r) => bodyOf(r).data.map((c: { code: string }) => c.code));

/**
 * The fault: the stream's row as the database had it when `cursor` (an earlier delivery's next) was
 * its position, as a restore or a lagging standby's promotion brings it back.
 */
async function positionSetBack(db: Database, endpointId: string, cursor: string): Promise<void> {
  const { x, k, t } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  await db.query(
    'UPDATE webhook_streams SET position_xid = $2::xid8, position_key = $3::text[], position_t = $4::int8 WHERE endpoint_id = $1',
    [endpointId, x, k, t],
  );
}

function patch(tenant: Tenant, id: string, body: unknown) {
  return tenant.send({
    method: 'PATCH',
    path: `/v1/webhooks/${id}`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

for (const backend of privateBackends()) {
  describe(`webhook positions that went back on ${backend.name}`, () => {
    // A round claims every due stream of the file's database: each test's endpoints are paused after it.
    afterEach(async () => {
      await (await backend.db()).query(
        "UPDATE webhook_endpoints SET status = 'paused' WHERE status = 'active'",
      );
    });

    test('a stored position behind what this instance delivered disables the endpoint; nothing is sent again', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const { tenant, app, warnings } = await newApp(db);
      try {
        const endpoint = await register(tenant, url, 2);
        await loadCustomers(db, tenant, ['C1', 'C2']);
        await deliver(app);
        await loadCustomers(db, tenant, ['C3', 'C4']);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C3', 'C4']);
        const disabledBefore = await metric(app, 'sfa_webhook_endpoint_changes_total{to="disabled"}');

        await positionSetBack(db, endpoint.id, bodyOf(received[0]!).next);
        await deliver(app);
        assert.equal(received.length, 2, 'C3 and C4 are not sent again under new webhook-ids');
        const shown = (await tenant.get(`/v1/webhooks/${endpoint.id}`)).body;
        assert.equal(shown.status, 'disabled');
        assert.equal(shown.disabled_reason, wentBackReason('customers'));
        assert.deepEqual(
          warnings().map(({ msg, webhook, reason }) => ({ msg, webhook, reason })),
          [{ msg: 'webhook endpoint disabled', webhook: endpoint.id, reason: wentBackReason('customers') }],
        );
        assert.equal(
          await metric(app, 'sfa_webhook_endpoint_changes_total{to="disabled"}'),
          disabledBefore + 1,
        );

        // The way on the reason gives: a replay after the last cursor the receiver took, then active.
        const replayed = await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, {
          resource: 'customers',
          after: bodyOf(received[1]!).next,
        });
        assert.equal(replayed.status, 202);
        assert.equal((await patch(tenant, endpoint.id, { status: 'active' })).status, 200);
        await loadCustomers(db, tenant, ['C5']);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C3', 'C4', 'C5']);
        assert.equal((await tenant.get(`/v1/webhooks/${endpoint.id}`)).body.status, 'active');
      } finally {
        await app.close();
      }
    });

    test("a position that went back within one transaction's records is seen too", async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const { tenant, app } = await newApp(db);
      try {
        const endpoint = await register(tenant, url, 2);
        // One batch, one transaction: the two deliveries' positions differ only by key.
        await loadCustomers(db, tenant, ['K1', 'K2', 'K3', 'K4']);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['K1', 'K2', 'K3', 'K4']);
        await positionSetBack(db, endpoint.id, bodyOf(received[0]!).next);
        await deliver(app);
        assert.equal(received.length, 2);
        const shown = (await tenant.get(`/v1/webhooks/${endpoint.id}`)).body;
        assert.equal(shown.status, 'disabled');
        assert.equal(shown.disabled_reason, wentBackReason('customers'));
      } finally {
        await app.close();
      }
    });

    test('set active again without a replay, the stream resumes from the stored position: disabled once', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const { tenant, app, warnings } = await newApp(db);
      try {
        const endpoint = await register(tenant, url, 2);
        await loadCustomers(db, tenant, ['A1', 'A2']);
        await deliver(app);
        await loadCustomers(db, tenant, ['A3', 'A4']);
        await deliver(app);
        await positionSetBack(db, endpoint.id, bodyOf(received[0]!).next);
        await deliver(app);
        assert.equal((await tenant.get(`/v1/webhooks/${endpoint.id}`)).body.status, 'disabled');
        // The integrator takes the records again: its choice, once told.
        assert.equal((await patch(tenant, endpoint.id, { status: 'active' })).status, 200);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['A1', 'A2', 'A3', 'A4', 'A3', 'A4']);
        assert.equal((await tenant.get(`/v1/webhooks/${endpoint.id}`)).body.status, 'active');
        assert.equal(warnings().length, 1);
      } finally {
        await app.close();
      }
    });

    test('a replay to an earlier cursor moves the stream back on purpose: deliveries go on', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const { tenant, app, warnings } = await newApp(db);
      try {
        const endpoint = await register(tenant, url, 2);
        await loadCustomers(db, tenant, ['R1', 'R2']);
        await deliver(app);
        await loadCustomers(db, tenant, ['R3', 'R4']);
        await deliver(app);
        const replayed = await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, {
          resource: 'customers',
          after: bodyOf(received[0]!).next,
        });
        assert.equal(replayed.status, 202);
        await deliver(app);
        assert.deepEqual(codesOf(received), ['R1', 'R2', 'R3', 'R4', 'R3', 'R4']);
        // Replayed from the start, within one transaction's records as well.
        await tenant.post(`/v1/webhooks/${endpoint.id}/replay`, { resource: 'customers' });
        await deliver(app);
        assert.deepEqual(codesOf(received.slice(3)), ['R1', 'R2', 'R3', 'R4']);
        assert.equal((await tenant.get(`/v1/webhooks/${endpoint.id}`)).body.status, 'active');
        assert.deepEqual(warnings(), []);
      } finally {
        await app.close();
      }
    });

    test('another instance moving the stream forward is no loss', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      // One delivery a turn: the first instance delivers the first batch only.
      const first = await newApp(db, { maxTurnMs: 0 });
      const second = await newApp(db);
      try {
        const endpoint = await register(first.tenant, url, 2);
        // One transaction: the positions the two instances stored differ only by key.
        await loadCustomers(db, first.tenant, ['F1', 'F2', 'F3', 'F4']);
        await deliver(first.app);
        assert.deepEqual(codesOf(received), ['F1', 'F2']);
        await deliver(second.app);
        assert.deepEqual(codesOf(received), ['F1', 'F2', 'F3', 'F4']);
        // The first instance finds the stream ahead of its own delivery, by key.
        await loadCustomers(db, first.tenant, ['F5']);
        await deliver(first.app);
        assert.deepEqual(codesOf(received), ['F1', 'F2', 'F3', 'F4', 'F5']);
        // And ahead by transaction.
        await loadCustomers(db, first.tenant, ['F6']);
        await deliver(second.app);
        await loadCustomers(db, first.tenant, ['F7']);
        await deliver(first.app);
        assert.deepEqual(codesOf(received), ['F1', 'F2', 'F3', 'F4', 'F5', 'F6', 'F7']);
        assert.equal((await first.tenant.get(`/v1/webhooks/${endpoint.id}`)).body.status, 'active');
        assert.deepEqual(first.warnings(), []);
      } finally {
        await first.app.close();
        await second.app.close();
      }
    });
  });
}
