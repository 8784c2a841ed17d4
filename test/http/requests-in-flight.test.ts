import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import Fastify from 'fastify';
import { requestsInFlight } from '../../src/http/requests-in-flight.js';
import { until } from '../helpers/jobs.js';

/*
 * Whether the app answers a request now (src/http/requests-in-flight.ts): true while one is under
 * way, whether its route was registered before or after, and false again once it is answered or its
 * client went away, so that a bulk job never stays slowed down by a request long gone.
 */

test('true while a request is answered, false once it is answered or its client left', async () => {
  const app = Fastify();
  const seen: boolean[] = [];
  app.get('/before', async () => {
    seen.push(serving());
    return { ok: true };
  });
  const serving = requestsInFlight(app);
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  app.get('/after', async () => {
    seen.push(serving());
    return { ok: true };
  });
  app.get('/slow', async () => {
    await released;
    return { ok: true };
  });
  assert.equal(serving(), false);
  assert.equal((await app.inject('/before')).statusCode, 200);
  assert.equal((await app.inject('/after')).statusCode, 200);
  assert.deepEqual(seen, [true, true]);
  assert.equal(serving(), false);

  // Over a real connection, dropped by its client while the route still works.
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const client = request({ host: '127.0.0.1', port, path: '/slow' });
    client.on('error', () => {});
    client.end();
    await until(
      async () => serving(),
      (now) => now,
      'the request arrives',
      10_000,
    );
    client.destroy();
    await until(
      async () => serving(),
      (now) => !now,
      'the request is no longer counted',
      10_000,
    );
  } finally {
    release();
    await app.close();
  }
  assert.equal(serving(), false);
});
