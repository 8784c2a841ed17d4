import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import { WORKER_BODY_BYTES, workerTasksCompleted } from '../../src/body-threads/batch-worker-pool.js';
import { ACKNOWLEDGE_BODY_LIMIT, NOT_A_DELIVERY_CODE } from '../../src/deliveries/acknowledge.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { keyFlood } from '../helpers/key-flood.js';

/*
 * Large batch bodies are parsed, checked and turned into column literals in a worker thread, so that
 * one request cannot hold the event loop every tenant shares: a key flood's JSON.parse alone held the event loop 400-650 ms for 4 MiB and 1-4 s for
 * 16 MiB. Here the event loop must never be held long while such a body is processed, and the answers of
 * the worker's pipeline must be the inline pipeline's. Figures are printed; what is asserted is counted
 * (tasks of the worker threads), never timed.
 */

const PRODUCTS = '/api/products/batch-create';
const STOCKS = '/api/stocks/batch-create';
const CUSTOMERS = '/api/customers/batch-create';
const ACKNOWLEDGE = '/v1/deliveries/acknowledge';
const ONE_MIB = 1024 * 1024;

/**
 * Posts the body and, meanwhile, GET /health every 20 ms: the slowest /health and the event loop's
 * longest delay (perf_hooks, 10 ms resolution) while the batch was processed.
 */
async function postWatched(tenant: TenantClient<NewTenant, InjectTransport>, path: string, payload: string) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let done = false;
  let slowestHealth = 0;
  /** /health answers completed while the batch request was in flight. */
  let answered = 0;
  const probes = (async () => {
    while (!done) {
      const started = performance.now();
      assert.equal((await tenant.transport.app.inject({ url: '/health' })).statusCode, 200);
      if (!done) answered++;
      slowestHealth = Math.max(slowestHealth, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const started = performance.now();
  const response = await tenant.transport.app.inject({
    method: 'POST',
    url: path,
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    payload,
  });
  const ms = performance.now() - started;
  done = true;
  await probes;
  histogram.disable();
  return { response, ms, slowestHealth, answered, loopMaxMs: histogram.max / 1e6 };
}

for (const backend of backends()) {
  describe(`large batch bodies in a worker thread on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
      // The pool's first thread starts with the first large body: not part of the figures below.
      await tenant.post(PRODUCTS, `[${' '.repeat(WORKER_BODY_BYTES)}]`);
    });
    after(() => tenant?.transport.app.close());

    for (const mib of [4, 16]) {
      test(`a ${mib} MiB key flood: 400 with the cut list, the event loop free meanwhile`, async () => {
        const payload = keyFlood(mib * ONE_MIB).text;
        const tasksBefore = workerTasksCompleted();
        // Customers: a body limit of 64 MiB (products: 11 MiB).
        const watched = await postWatched(tenant, CUSTOMERS, payload);
        console.log(
          `# ${backend.name}, ${mib} MiB key flood: ${watched.response.statusCode} in ${watched.ms.toFixed(0)} ms; ` +
            `${watched.answered} /health answered meanwhile, slowest ${watched.slowestHealth.toFixed(1)} ms, event loop delay max ${watched.loopMaxMs.toFixed(1)} ms`,
        );
        assert.equal(watched.response.statusCode, 400);
        const [only] = watched.response.json().errors;
        assert.equal(only.index, 0);
        assert.equal(only.errors.length, 101);
        assert.ok(only.errors.some((error: { field: string }) => error.field === '_0'));
        assert.match(only.errors[100].message, /^Too many errors in this item/);
        // Counted, not timed: inline, the parse alone held the event loop 870-1,160 ms for 4 MiB and
        // 4.8-5.4 s for 16 MiB in one piece. The body went to a worker thread instead; how many /health
        // probes fit meanwhile depends on how fast each thread runs, so it is printed, not asserted.
        assert.equal(workerTasksCompleted() - tasksBefore, 1, 'one task of the worker threads');
      });
    }

    test('a 2 MiB acknowledgement key flood: 400, checked by a worker thread, not on the event loop', async () => {
      // The acknowledgement's largest body: one object element of short keys (V8 builds it key by key).
      const payload = keyFlood(ACKNOWLEDGE_BODY_LIMIT - 1024).text;
      const tasksBefore = workerTasksCompleted();
      const watched = await postWatched(tenant, ACKNOWLEDGE, payload);
      console.log(
        `# ${backend.name}, 2 MiB acknowledgement key flood: ${watched.response.statusCode} in ${watched.ms.toFixed(0)} ms; ` +
          `slowest /health ${watched.slowestHealth.toFixed(1)} ms, event loop delay max ${watched.loopMaxMs.toFixed(1)} ms`,
      );
      assert.equal(watched.response.statusCode, 400);
      assert.deepEqual(watched.response.json().errors, [
        { index: 0, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] },
      ]);
      // Counted, not timed: the body was parsed and checked by a worker thread, not on the event loop
      // (where it held the loop 45-90 ms, too close to a busy machine's own delays to tell apart by
      // wall clock). The figures above are printed for the reader.
      assert.equal(workerTasksCompleted() - tasksBefore, 1, 'one task of the worker threads');
    });

    test('a large acknowledgement body answers as a small one: array rules, codes, not codes', async () => {
      const pad = ' '.repeat(WORKER_BODY_BYTES);
      const answer = async (body: string) => {
        const response = await tenant.post(ACKNOWLEDGE, body);
        return { status: response.status, body: response.body };
      };
      for (const [large, small] of [
        [`[${pad}`, '['],
        [`{${pad}}`, '{}'],
        [`[${pad}]`, '[]'],
        [`[${'"D",'.repeat(10_000)}"D"${pad}]`, `[${'"D",'.repeat(10_000)}"D"]`],
        [`["D1", 5, ""${pad}]`, '["D1", 5, ""]'],
        [`["D1", "D2", "D1"${pad}]`, '["D1", "D2", "D1"]'],
      ]) {
        assert.deepEqual(await answer(large!), await answer(small!), small);
      }
    });

    test('the array rules and invalid JSON of a large body: the spec messages', async () => {
      const pad = ' '.repeat(WORKER_BODY_BYTES);
      const message = async (body: string) => (await tenant.post(PRODUCTS, body)).body.errors[0].message;
      assert.equal(await message(`[${pad}`), 'Invalid JSON in request body');
      assert.equal(await message(`{${pad}}`), 'Request body must be an array');
      assert.equal(await message(`[${pad}]`), 'Request body cannot be empty');
      assert.equal(
        await message(`[${'1,'.repeat(10_000)}1${pad}]`),
        'Array exceeds maximum limit of 10000 items',
      );
      assert.equal(await message(`["\\ud800"${pad}]`), 'Invalid JSON in request body');
      const notUtf8 = await tenant.transport.app.inject({
        method: 'POST',
        url: PRODUCTS,
        headers: { ...tenant.headers, 'content-type': 'application/json' },
        payload: Buffer.from(`["\xff"${pad}]`, 'latin1'),
      });
      assert.equal(notUtf8.json().errors[0].message, 'Invalid JSON in request body');
    });

    test('a large valid batch: written, a repeated key counted once', async () => {
      const products = Array.from({ length: 3_000 }, (_, n) => ({
        code: `WK${n}`,
        description: `product ${n} ${'x'.repeat(60)}`,
      }));
      // A repeat of the first code: the last one wins (an upsert).
      products.push({ code: 'WK0', description: 'last wins' });
      const body = JSON.stringify(products);
      assert.ok(body.length > WORKER_BODY_BYTES);
      const answer = await tenant.post(PRODUCTS, body);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.deepEqual(
        { ...answer.body, message: undefined },
        {
          statusCode: 201,
          message: undefined,
          created: 3_000,
          updated: 0,
          ignored: 1,
        },
      );
    });

    test('a large batch naming unknown products: each named, with the other problems', async () => {
      const stocks = Array.from({ length: 6_000 }, (_, n) => ({
        product_code: n % 1_000 === 7 ? `NOPE${n}` : `WK${n % 3_000}`,
        location: `LOCATION-${n}`,
        quantity: 1,
      }));
      const body = JSON.stringify(stocks);
      assert.ok(body.length > WORKER_BODY_BYTES, `${body.length}`);
      const answer = await tenant.post(STOCKS, body);
      assert.equal(answer.status, 400, JSON.stringify(answer.body).slice(0, 500));
      assert.deepEqual(
        answer.body.errors.map((error: { index: number }) => error.index),
        [7, 1_007, 2_007, 3_007, 4_007, 5_007],
      );
      assert.deepEqual(answer.body.errors[0].errors, [
        { field: 'product_code', message: 'Product does not exist in the product master' },
      ]);
    });
  });
}
