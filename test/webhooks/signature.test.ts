import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  deliveryHeaders,
  newMessageId,
  newWebhookSecret,
  signatureHeader,
} from '../../src/webhooks/signature.js';

/*
 * Deliveries are signed by the Standard Webhooks scheme (extensions.md 11), verified here with the
 * `standardwebhooks` package, the reference implementation receivers use, not only with our own code.
 */

const body = JSON.stringify({ type: 'changes', resource: 'customers', data: [{ code: 'C1' }], next: 'abc' });
const now = () => Math.floor(Date.now() / 1000);

test('a secret is whsec_ and the base64 of 32 random bytes; message ids are msg_ and unique', () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
  assert.notEqual(newWebhookSecret(), secret);
  const ids = new Set(Array.from({ length: 1000 }, newMessageId));
  assert.equal(ids.size, 1000);
  for (const id of ids) assert.match(id, /^msg_[A-Za-z0-9_-]{22}$/);
});

test('a receiver verifies a delivery with the reference implementation; a changed byte fails', () => {
  const secret = newWebhookSecret();
  const headers = deliveryHeaders({
    secrets: [secret],
    messageId: newMessageId(),
    timestampSeconds: now(),
    body,
    userAgent: 'sfa-backoffice/0.1.0',
  });
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['user-agent'], 'sfa-backoffice/0.1.0');
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(secret).verify(body.replace('C1', 'C2'), headers));
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), 'another secret fails');
  const late = { ...headers, 'webhook-timestamp': String(now() - 3600) };
  assert.throws(() => new Webhook(secret).verify(body, late), 'the timestamp is signed too');
});

test('while a rotated secret still signs, the header carries both and either verifies', () => {
  const [next, previous] = [newWebhookSecret(), newWebhookSecret()];
  const messageId = newMessageId();
  const timestampSeconds = now();
  const header = signatureHeader([next, previous], messageId, timestampSeconds, body);
  assert.match(header, /^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
  const headers = {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': header,
  };
  for (const secret of [next, previous])
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.throws(() => signatureHeader(['not-a-secret'], messageId, timestampSeconds, body), /whsec_/);
});
