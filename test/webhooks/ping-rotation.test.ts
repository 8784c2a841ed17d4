import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ownedTenantApp } from '../helpers/app.js';
import { privateBackends, type Received, receiver, testWebhookSettings } from './webhooks.js';

/*
 * A ping is signed like every delivery (src/webhooks/ping.ts, extensions.md 11): by the endpoint's
 * secret, and during a rotation's 24 hours by the new secret and the old one, the new one first;
 * once they are over, by the new secret alone. Each signature is checked on its own with the
 * `standardwebhooks` package, so a header that carries one secret's signature twice, or the old
 * secret's in the new one's place, is caught.
 */

/** The delivery with only its `at`-th signature left in webhook-signature. */
function withSignature(delivery: Received, at: number): Record<string, string> {
  const signatures = String(delivery.headers['webhook-signature']).split(' ');
  assert.ok(at < signatures.length, `no signature ${at + 1} in "${signatures.join(' ')}"`);
  return { ...(delivery.headers as Record<string, string>), 'webhook-signature': signatures[at]! };
}

/** Whether the secret verifies the delivery with that one signature alone. */
function signs(secret: string, delivery: Received, at: number): boolean {
  try {
    new Webhook(secret).verify(delivery.body, withSignature(delivery, at));
    return true;
  } catch {
    return false;
  }
}

const signatureCount = (delivery: Received) =>
  String(delivery.headers['webhook-signature']).split(' ').length;

for (const backend of privateBackends()) {
  describe(`a ping during a secret rotation on ${backend.name}`, () => {
    test('is signed by the new secret and the old one for 24 hours, then by the new one alone', async () => {
      const db = await backend.db();
      const { url, received } = await receiver();
      const tenant = await ownedTenantApp(db, { webhooks: testWebhookSettings() });
      try {
        const registered = await tenant.post('/v1/webhooks', { url: url.href, resources: ['customers'] });
        assert.equal(registered.status, 201, `endpoint not registered: ${registered.text}`);
        const { id, secret: first } = registered.body as { id: string; secret: string };
        const ping = async () => {
          const before = received.length;
          const answer = await tenant.send({ method: 'POST', path: `/v1/webhooks/${id}/ping` });
          assert.equal(answer.status, 200, `ping not answered 200: ${answer.text}`);
          assert.equal(answer.body.statusCode, 204, `the ping did not reach the receiver: ${answer.text}`);
          assert.equal(received.length, before + 1, 'the ping did not arrive once');
          const delivery = received.at(-1)!;
          assert.deepEqual(JSON.parse(delivery.body), { type: 'ping', webhook: id });
          return delivery;
        };

        const unrotated = await ping();
        assert.equal(
          signatureCount(unrotated),
          1,
          'a ping before any rotation carries more than one signature',
        );
        assert.ok(signs(first, unrotated, 0), 'the ping before any rotation is not signed by the secret');

        const rotated = await tenant.send({ method: 'POST', path: `/v1/webhooks/${id}/rotate-secret` });
        assert.equal(rotated.status, 200, `secret not rotated: ${rotated.text}`);
        const second = rotated.body.secret as string;
        assert.notEqual(second, first, 'the rotation gave the same secret');
        const during = await ping();
        assert.equal(signatureCount(during), 2, 'a ping during the rotation does not carry two signatures');
        assert.ok(
          signs(second, during, 0),
          'the first signature of a ping during the rotation is not the new secret’s',
        );
        assert.ok(
          signs(first, during, 1),
          'the second signature of a ping during the rotation is not the old secret’s',
        );
        assert.ok(!signs(first, during, 0), 'the old secret also made the first signature');

        // The old secret's 24 hours are over (moved back rather than waited out).
        await db.query(
          "UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second' WHERE id = $1",
          [id],
        );
        const after = await ping();
        assert.equal(
          signatureCount(after),
          1,
          'a ping after the rotation’s 24 hours still carries two signatures',
        );
        assert.ok(signs(second, after, 0), 'the ping after the rotation is not signed by the new secret');
        assert.ok(!signs(first, after, 0), 'the ping after the rotation is still signed by the old secret');
      } finally {
        await tenant.transport.app.close();
      }
    });
  });
}
