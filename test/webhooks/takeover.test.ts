import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { claimStreams } from '../../src/sql/webhook-streams.js';
import { INTERRUPTED_ERROR } from '../../src/sql/webhook-takeover.js';
import type { DeliverySettings } from '../../src/webhooks/delivery-work.js';
import { ownedTenantApp } from '../helpers/app.js';
import {
  deliver,
  loadCustomers,
  privateBackends,
  type Received,
  receiver,
  testWebhookSettings,
  until,
} from './webhooks.js';

/*
 * A webhook stream whose instance stops is taken over (extensions.md 11: within 10 seconds;
 * docs/decisions/0141-leases-within-ten-seconds.md), in-process and without sleeping out a lease: an
 * instance "dies" mid-attempt with its renewals off (a killed process renews nothing) and its
 * receiver holding the request; its lease runs out when the test moves held_until into the past.
 * The next holder lists the attempt that died with its instance (0142) and sends the delivery again
 * with the same webhook-id; a live holder's renewals move its lease forward during a long attempt,
 * and a holder whose renewal finds the stream another's drops its attempt and records nothing.
 */

type Tenant = TenantClient<any, InjectTransport>;

/** Renewals that never come within a test: the instance renews nothing, as a killed one. */
const NO_RENEWAL = 3_600_000;

async function newApp(db: Database, webhooks: Partial<DeliverySettings> = {}) {
  return ownedTenantApp(db, { webhooks: testWebhookSettings(webhooks) });
}

async function register(tenant: Tenant, url: URL) {
  const response = await tenant.post('/v1/webhooks', { resources: ['customers'], url: url.href });
  assert.equal(response.status, 201, response.text);
  return response.body as { id: string };
}

/** The stream's lease runs out: what the database's clock shows 8 s after its last renewal. */
async function leaseRunsOut(db: Database, endpointId: string): Promise<void> {
  await db.query(
    "UPDATE webhook_streams SET held_until = now() - interval '1 second' WHERE endpoint_id = $1",
    [endpointId],
  );
}

const codesOf = (received: Received[]) =>
  received.flatMap((r) => JSON.parse(r.body).data.map((c: { code: string }) => c.code));

/** A receiver that holds each request while `hold()` says so, and tells which of those were dropped. */
async function holdingReceiver(hold: () => boolean) {
  const held: ServerResponse[] = [];
  const dropped: ServerResponse[] = [];
  const got = await receiver((_request, response) => {
    if (hold()) {
      held.push(response);
      response.on('close', () => {
        if (!response.writableEnded) dropped.push(response);
      });
      return;
    }
    response.statusCode = 200;
    response.end();
  });
  return { ...got, held, dropped };
}

for (const backend of privateBackends()) {
  describe(`webhook streams taken over on ${backend.name}`, () => {
    // A round claims every due stream of the file's database: each test's endpoints are paused after it.
    afterEach(async () => {
      await (await backend.db()).query(
        "UPDATE webhook_endpoints SET status = 'paused' WHERE status = 'active'",
      );
    });

    test('the attempt that died with its instance is listed, and the next holder repeats it with the same webhook-id', async () => {
      const db = await backend.db();
      let hold = true;
      const { url, received, held } = await holdingReceiver(() => hold);
      const first = await newApp(db, { timeoutMs: 60_000, renewEveryMs: NO_RENEWAL });
      const second = await newApp(db);
      try {
        const endpoint = await register(first, url);
        await loadCustomers(db, first, ['C1', 'C2']);
        await first.transport.app.webhookDeliveries.round();
        await until(() => received.length === 1, 'the first attempt arrives');
        // Held: the other instance has nothing to take.
        await deliver(second.transport.app);
        assert.equal(received.length, 1);

        // The first instance is dead mid-attempt; its lease runs out.
        await leaseRunsOut(db, endpoint.id);
        hold = false;
        await deliver(second.transport.app);
        assert.equal(received.length, 2, 'the delivery is sent again');
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        assert.equal(received[1]!.body, received[0]!.body, 'the same records');

        const log = (await first.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
        const id = received[0]!.headers['webhook-id'];
        assert.equal(log.length, 2, JSON.stringify(log));
        const { attemptedAt: _late, durationMs: took, ...repeated } = log[0];
        assert.deepEqual(repeated, {
          id,
          resource: 'customers',
          records: 2,
          attempt: 2,
          statusCode: 200,
          error: null,
        });
        assert.ok(took >= 0);
        const { attemptedAt: diedAt, ...died } = log[1];
        assert.deepEqual(died, {
          id,
          resource: 'customers',
          records: 2,
          attempt: 1,
          statusCode: null,
          error: INTERRUPTED_ERROR,
          durationMs: 0,
        });
        assert.ok(Date.parse(diedAt) <= Date.parse(log[0].attemptedAt));

        // The dead instance's attempt ends after all (a stalled process, not a killed one): it was
        // taken over, so it records nothing and lists nothing.
        for (const response of held) {
          response.statusCode = 200;
          response.end();
        }
        await first.transport.app.webhookDeliveries.settled();
        assert.equal((await first.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data.length, 2);

        // The stream goes on from the delivery taken, once.
        await loadCustomers(db, first, ['C3']);
        await deliver(second.transport.app);
        assert.deepEqual(codesOf(received), ['C1', 'C2', 'C1', 'C2', 'C3']);
        const after = (await first.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
        assert.deepEqual(
          after.map((row: { attempt: number; error: string | null }) => [row.attempt, row.error]),
          [
            [1, null],
            [2, null],
            [1, INTERRUPTED_ERROR],
          ],
        );
        const endpointNow = (await first.get(`/v1/webhooks/${endpoint.id}`)).body;
        assert.equal(endpointNow.failing_since, null, 'an instance stopping is not the endpoint failing');
      } finally {
        for (const response of held) if (!response.writableEnded) response.end();
        await first.transport.app.close();
        await second.transport.app.close();
      }
    });

    test('a holder that stopped between deliveries leaves no attempt to list', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await newApp(db);
      try {
        const endpoint = await register(tenant, url);
        await loadCustomers(db, tenant, ['D1']);
        // Another instance claims the stream and dies before it begins a delivery.
        const [claimed] = await claimStreams(db, 'instance-dead', 1, [], 8);
        assert.equal(claimed?.endpoint_id, endpoint.id);
        assert.equal(claimed.interrupted, false);
        await leaseRunsOut(db, endpoint.id);
        await deliver(tenant.transport.app);
        assert.deepEqual(codesOf(received), ['D1']);
        const log = (await tenant.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
        assert.deepEqual(
          log.map((row: { attempt: number; error: string | null }) => [row.attempt, row.error]),
          [[1, null]],
        );
      } finally {
        await tenant.transport.app.close();
      }
    });

    test("a long attempt keeps its lease; once the stream is another's, the attempt is dropped and nothing recorded", async () => {
      const db = await backend.db();
      let hold = true;
      const { url, received, held, dropped } = await holdingReceiver(() => hold);
      // Renewals every 50 ms instead of every third of 8 s: the period is what the test sets.
      const first = await newApp(db, { timeoutMs: 60_000, renewEveryMs: 50 });
      const second = await newApp(db);
      try {
        const endpoint = await register(first, url);
        await loadCustomers(db, first, ['E1']);
        await first.transport.app.webhookDeliveries.round();
        await until(() => received.length === 1, 'the first attempt arrives');
        const leaseOf = async () =>
          (
            await db.query<{ holder: string; until: string }>(
              'SELECT holder, held_until::text AS until FROM webhook_streams WHERE endpoint_id = $1',
              [endpoint.id],
            )
          )[0]!;
        const before = await leaseOf();
        let moved = false;
        await until(
          () => moved,
          'the lease moves forward while the attempt runs',
          async () => {
            const [row] = await db.query<{ later: boolean }>(
              'SELECT held_until > $2::timestamptz AS later FROM webhook_streams WHERE endpoint_id = $1',
              [endpoint.id, before.until],
            );
            moved = row!.later;
            // A timer's turn: PGlite answers within microtasks, and a loop of them alone would
            // starve the renewals' timer.
            await new Promise((done) => setTimeout(done, 20));
          },
        );
        assert.equal((await leaseOf()).holder, before.holder, 'still the same holder');
        assert.equal(first.transport.app.webhookDeliveries.turns, 1, 'the attempt still runs');

        // Its lease runs out anyway (a database slower than three renewals) and the other instance
        // takes the stream over: tried until the other's claim comes before the holder's renewal.
        hold = false;
        await until(
          () => received.length === 2,
          'the other instance takes the stream over',
          async () => {
            await leaseRunsOut(db, endpoint.id);
            await deliver(second.transport.app);
          },
        );
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        // The first instance's next renewal finds the stream another's: its attempt is dropped
        // (the receiver never answered it), and its turn ends recording nothing.
        await until(() => dropped.length === 1, 'the stale attempt is dropped');
        await first.transport.app.webhookDeliveries.settled();
        const log = (await first.get(`/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
        assert.deepEqual(
          log.map((row: { attempt: number; statusCode: number | null; error: string | null }) => [
            row.attempt,
            row.statusCode,
            row.error,
          ]),
          [
            [2, 200, null],
            [1, null, INTERRUPTED_ERROR],
          ],
        );
      } finally {
        for (const response of held) if (!response.writableEnded) response.end();
        await first.transport.app.close();
        await second.transport.app.close();
      }
    });
  });
}
