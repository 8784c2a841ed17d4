import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePort } from '../../kit/free-port.js';
import { addressRules, parseNetworks, type Resolve } from '../../src/webhooks/addresses.js';
import {
  type Attempt,
  attemptDelivery,
  MAX_RESPONSE_BYTES,
  retryAfterSeconds,
} from '../../src/webhooks/attempt.js';
import { receiver } from './webhooks.js';

/*
 * One attempt of a webhook delivery against receivers on loopback (allowed by the operator's
 * networks, as WEBHOOK_ALLOWED_NETWORKS would): delivered only on a 2xx, redirects never followed,
 * the body read at most up to its cap, every failure a result in the deliveries log's words.
 */

const loopback = addressRules(parseNetworks('127.0.0.0/8'));
const noDns: Resolve = async (hostname) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

const attempt = (url: URL, overrides: Partial<Attempt> = {}) =>
  attemptDelivery({
    url,
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
    body: '{"type":"ping","webhook":"wh_1"}',
    timeoutMs: 5_000,
    rules: loopback,
    resolve: noDns,
    ...overrides,
  });

test('a 2xx is delivered; the body and headers arrive as sent', async () => {
  const { url, received } = await receiver((_request, response) => {
    response.statusCode = 204;
    response.end();
  });
  const result = await attempt(url);
  assert.equal(result.delivered, true);
  assert.equal(result.statusCode, 204);
  assert.equal(result.error, null);
  assert.ok(result.durationMs >= 0);
  assert.equal(received.length, 1);
  assert.equal(received[0]!.body, '{"type":"ping","webhook":"wh_1"}');
  assert.equal(received[0]!.headers['webhook-id'], 'msg_1');
  assert.equal(received[0]!.headers['content-length'], String(received[0]!.body.length));
});

test('any other status is not delivered; a 429 or 503 tells when to come back', async () => {
  let status = 500;
  const { url } = await receiver((_request, response) => {
    response.statusCode = status;
    if (status === 429) response.setHeader('retry-after', '120');
    if (status === 503) response.setHeader('retry-after', '999999');
    response.end('internal details the service never keeps');
  });
  assert.deepEqual(
    { ...(await attempt(url)), durationMs: 0 },
    {
      delivered: false,
      statusCode: 500,
      error: 'status 500',
      durationMs: 0,
    },
  );
  status = 429;
  assert.equal((await attempt(url)).retryAfterSeconds, 120);
  status = 503;
  assert.equal((await attempt(url)).retryAfterSeconds, 3600, 'at most an hour');
  status = 400;
  assert.equal((await attempt(url)).retryAfterSeconds, undefined);
});

test('a redirect is never followed', async () => {
  const target = await receiver((_request, response) => response.end());
  const { url } = await receiver((_request, response) => {
    response.statusCode = 307;
    response.setHeader('location', target.url.href);
    response.end();
  });
  const result = await attempt(url);
  assert.deepEqual(
    [result.delivered, result.statusCode, result.error],
    [false, 307, 'redirect not followed'],
  );
  assert.equal(target.received.length, 0);
});

test('an endless answer is cut at its cap; the attempt ends all the same', async () => {
  let sent = 0;
  let dropped!: () => void;
  const closed = new Promise<void>((done) => {
    dropped = done;
  });
  const { url } = await receiver((_request, response) => {
    response.on('close', dropped);
    response.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(16 * 1024, 120);
    const more = () => {
      while (!response.destroyed && response.write(chunk)) {
        sent += chunk.length;
        if (sent > 50 * MAX_RESPONSE_BYTES) return response.end();
      }
      if (!response.destroyed) response.once('drain', more);
    };
    more();
  });
  const result = await attempt(url);
  assert.equal(result.delivered, true);
  // The service dropped the connection before the receiver could send far past the cap.
  await closed;
  assert.ok(sent < 50 * MAX_RESPONSE_BYTES, `the receiver sent ${sent} bytes`);
});

test('no answer in time is a timeout; a closed port is refused; an inside address is never reached', async (t) => {
  let heard!: () => void;
  const requestArrived = new Promise<void>((done) => {
    heard = done;
  });
  // Never answers.
  const { url: silent } = await receiver(() => heard());
  // The attempt's clock is the test's: it runs out once the request has arrived, not by the wall clock.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let settled = false;
  const waiting = attempt(silent, { timeoutMs: 150 }).finally(() => {
    settled = true;
  });
  await requestArrived;
  t.mock.timers.tick(149);
  await new Promise((done) => setImmediate(done));
  assert.equal(settled, false, 'still waiting for the answer until its time is up');
  t.mock.timers.tick(1);
  const slow = await waiting;
  t.mock.timers.reset();
  assert.deepEqual([slow.delivered, slow.statusCode, slow.error], [false, null, 'timeout']);

  const closed = new URL(`http://127.0.0.1:${await freePort()}/hooks`);
  const refused = await attempt(closed);
  assert.deepEqual(
    [refused.delivered, refused.statusCode, refused.error],
    [false, null, 'connection refused'],
  );

  const { url, received } = await receiver((_request, response) => response.end());
  const inside = await attempt(url, { rules: addressRules() });
  assert.deepEqual([inside.delivered, inside.statusCode, inside.error], [false, null, 'address not allowed']);
  const named = await attempt(new URL(`http://erp.example.com:${url.port}/hooks`), {
    rules: addressRules(),
    resolve: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  assert.equal(named.error, 'address not allowed');
  assert.equal(received.length, 0);
  const unresolved = await attempt(new URL('https://erp.example.invalid/hooks'), { rules: addressRules() });
  assert.equal(unresolved.error, 'name not resolved');
});

test('Retry-After as seconds or as an HTTP date', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  assert.equal(retryAfterSeconds('30', now), 30);
  assert.equal(retryAfterSeconds('Wed, 25 Nov 2026 12:02:00 GMT', now), 120);
  assert.equal(retryAfterSeconds('Wed, 25 Nov 2026 11:00:00 GMT', now), 0);
  assert.equal(retryAfterSeconds('soon', now), undefined);
  assert.equal(retryAfterSeconds(undefined, now), undefined);
});
