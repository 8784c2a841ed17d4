import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { statusAndBody } from '../helpers/answer.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { keyFlood } from '../helpers/key-flood.js';

/*
 * Error amplification: a small or medium body must not buy a huge answer, nor hold
 * the event loop while every one of its problems is listed. Each item lists at most 100 problems, an
 * answer at most 50,000, and a cut list says so in its last element. Figures are printed; time bounds
 * are generous (a shared machine), size bounds are exact.
 */

const PRODUCTS = '/api/products/batch-create';
const ONE_MIB = 1024 * 1024;
const ITEM_CUT = 'Too many errors in this item: only the first 100 are listed';
const ANSWER_CUT = 'Too many errors in this answer: only the first 50000 are listed';

interface Timed {
  status: number;
  text: string;
  ms: number;
  /**
   * The longest the event loop was held between two turns during the request: how long a /health
   * arriving at the worst moment waits. (A timer that never fires until the end counts too.)
   */
  stallMs: number;
}

/** Posts the body while a timer watches the event loop; /health must answer right after. */
async function timedPost(tenant: TenantClient<NewTenant, InjectTransport>, payload: string): Promise<Timed> {
  let last = performance.now();
  let stallMs = 0;
  const tick = () => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  };
  const ticker = setInterval(tick, 1);
  const started = performance.now();
  const response = await tenant.transport.app.inject({
    method: 'POST',
    url: PRODUCTS,
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    payload,
  });
  tick();
  clearInterval(ticker);
  const ms = performance.now() - started;
  assert.equal((await tenant.transport.app.inject({ url: '/health' })).statusCode, 200);
  return { status: response.statusCode, text: response.body, ms, stallMs };
}

const show = (what: string, bodyBytes: number, t: Timed) =>
  console.log(
    `# ${what}: body ${(bodyBytes / ONE_MIB).toFixed(1)} MiB -> ${t.status}, answer ${t.text.length} bytes ` +
      `in ${t.ms.toFixed(0)} ms; event loop held at most ${t.stallMs.toFixed(0)} ms`,
  );

for (const backend of backends()) {
  describe(`error amplification on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
    });
    after(() => tenant?.transport.app.close());

    test('one item with 4 MiB of unknown keys: 100 problems and the cut, a small answer, /health served', async () => {
      const { text, keys } = keyFlood(4 * ONE_MIB, 'AMP');
      const timed = await timedPost(tenant, text);
      show(`1 item, ${keys} unknown keys`, text.length, timed);
      assert.equal(timed.status, 400);
      assert.ok(timed.text.length < 16 * 1024, `answer of ${timed.text.length} bytes`);
      const body = JSON.parse(timed.text);
      assert.equal(body.statusCode, 400);
      assert.equal(body.errors.length, 1);
      const [only] = body.errors;
      assert.equal(only.index, 0);
      assert.equal(only.errors.length, 101);
      assert.deepEqual(only.errors[0], { field: '_0', message: 'Unknown field' });
      assert.deepEqual(only.errors[99], { field: `_${(99).toString(36)}`, message: 'Unknown field' });
      assert.deepEqual(only.errors[100], { field: null, message: ITEM_CUT });
      // The parse of 4 MiB of distinct keys is itself a few hundred ms
      // (docs/decisions/0117-worker-thread-for-large-bodies.md); listing
      // hundreds of thousands of problems was seconds more.
      assert.ok(timed.stallMs < 3_000, `event loop held ${timed.stallMs.toFixed(0)} ms`);
    });

    test('5,000 items with 20 unknown keys each: 50,000 problems listed, then the cut', async () => {
      const extra = Array.from({ length: 20 }, (_, k) => `"x${k}":0`).join(',');
      const items = Array.from({ length: 5_000 }, (_, n) => `{"code":"A${n}","description":"d",${extra}}`);
      const text = `[${items.join(',')}]`;
      const timed = await timedPost(tenant, text);
      show('5,000 items x 20 unknown keys', text.length, timed);
      assert.equal(timed.status, 400);
      const body = JSON.parse(timed.text);
      const listed = body.errors.slice(0, -1);
      const cut = body.errors.at(-1);
      assert.deepEqual(cut, { index: null, field: null, message: ANSWER_CUT });
      assert.equal(listed.length, 2_500, 'every item up to the cut is listed whole');
      assert.deepEqual(listed[0], { index: 0, errors: extraErrors() });
      assert.equal(listed.at(-1).index, 2_499);
      const problemsListed = listed.reduce(
        (sum: number, e: { errors: unknown[] }) => sum + e.errors.length,
        0,
      );
      assert.equal(problemsListed, 50_000);
      assert.ok(timed.text.length < 4 * ONE_MIB, `answer of ${timed.text.length} bytes`);
      assert.ok(timed.stallMs < 3_000, `event loop held ${timed.stallMs.toFixed(0)} ms`);
    });

    test('an unknown key of 1 MiB is echoed by its first 100 characters, not whole', async () => {
      const key = `${'k'.repeat(99)}😀${'z'.repeat(ONE_MIB)}`;
      const answer = await tenant.post(PRODUCTS, `[{"code":"K","description":"d","${key}":1}]`);
      assert.deepEqual(statusAndBody(answer), {
        status: 400,
        body: {
          statusCode: 400,
          errors: [{ index: 0, errors: [{ field: `${'k'.repeat(99)}...`, message: 'Unknown field' }] }],
        },
      });
    });

    test('a batch whose problems fit under the caps is answered whole, without a cut', async () => {
      const items = Array.from({ length: 3 }, (_, n) => ({ code: `W${n}`, description: 'd', nope: n }));
      const answer = await tenant.post(PRODUCTS, items);
      assert.deepEqual(statusAndBody(answer), {
        status: 400,
        body: {
          statusCode: 400,
          errors: items.map((_, index) => ({ index, errors: [{ field: 'nope', message: 'Unknown field' }] })),
        },
      });
    });
  });
}

function extraErrors() {
  return Array.from({ length: 20 }, (_, k) => ({ field: `x${k}`, message: 'Unknown field' }));
}
