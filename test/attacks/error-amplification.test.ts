import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import { MAX_ERRORS_PER_ITEM } from '../../src/batch/batch-errors.js';
import { validateItems } from '../../src/batch/validate-items.js';
import { workerTasksCompleted } from '../../src/body-threads/batch-worker-pool.js';
import { fieldMessages } from '../../src/fields/messages.js';
import { products } from '../../src/resources/products.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { statusAndBody } from '../helpers/answer.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { keyFlood } from '../helpers/key-flood.js';

/*
 * Error amplification: a small or medium body must not buy a huge answer, nor hold
 * the event loop while every one of its problems is listed. Each item lists at most 100 problems, an
 * answer at most 50,000, and a cut list says so in its last element. Sizes are printed; the bounds
 * are on sizes and on work counted (where the body was checked, how many problems were looked for),
 * never on time: a shared machine makes any time bound either flaky or too loose to mean anything.
 */

const PRODUCTS = '/api/products/batch-create';
const ONE_MIB = 1024 * 1024;
const ITEM_CUT = 'Too many errors in this item: only the first 100 are listed';
const ANSWER_CUT = 'Too many errors in this answer: only the first 50000 are listed';

interface Answered {
  status: number;
  text: string;
  /** Tasks the worker threads finished during the request: 1 when the body was checked off the event loop. */
  workerTasks: number;
}

/** Posts the body; /health must answer right after. */
async function post(tenant: TenantClient<NewTenant, InjectTransport>, payload: string): Promise<Answered> {
  const tasksBefore = workerTasksCompleted();
  const response = await tenant.transport.app.inject({
    method: 'POST',
    url: PRODUCTS,
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    payload,
  });
  const workerTasks = workerTasksCompleted() - tasksBefore;
  assert.equal((await tenant.transport.app.inject({ url: '/health' })).statusCode, 200);
  return { status: response.statusCode, text: response.body, workerTasks };
}

const show = (what: string, bodyBytes: number, answered: Answered) =>
  console.log(
    `# ${what}: body ${(bodyBytes / ONE_MIB).toFixed(1)} MiB -> ${answered.status}, answer ` +
      `${answered.text.length} bytes, ${answered.workerTasks} worker task(s)`,
  );

/**
 * How many unknown-key problems validateItems looks for in items: each one reads the message once,
 * so a getter on it counts the work, whatever the machine's speed.
 */
function unknownKeysLookedFor(items: unknown[]): number {
  let reads = 0;
  const own = Object.getOwnPropertyDescriptor(fieldMessages, 'unknownField')!;
  Object.defineProperty(fieldMessages, 'unknownField', {
    configurable: true,
    enumerable: true,
    get: () => {
      reads++;
      return own.value;
    },
  });
  try {
    validateItems(products, items);
  } finally {
    Object.defineProperty(fieldMessages, 'unknownField', own);
  }
  return reads;
}

for (const backend of backends()) {
  describe(`error amplification on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
    });
    after(() => tenant?.transport.app.close());

    test('one item with 4 MiB of unknown keys: 100 problems and the cut, a small answer, /health served', async () => {
      const { text, keys } = keyFlood(4 * ONE_MIB, 'AMP');
      const timed = await post(tenant, text);
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
      // The parse of 4 MiB of distinct keys is itself a few hundred ms: it runs in a worker thread
      // (docs/decisions/0117-worker-thread-for-large-bodies.md), not on the event loop.
      assert.equal(timed.workerTasks, 1, 'the body was checked in a worker thread');
      // Listing hundreds of thousands of problems was seconds more: the check stops looking once the
      // item has one problem past its cap, rather than listing them all and cutting the list after.
      const lookedFor = unknownKeysLookedFor(JSON.parse(text));
      assert.equal(lookedFor, MAX_ERRORS_PER_ITEM + 1, `${lookedFor} unknown keys looked for of ${keys}`);
    });

    test('5,000 items with 20 unknown keys each: 50,000 problems listed, then the cut', async () => {
      const extra = Array.from({ length: 20 }, (_, k) => `"x${k}":0`).join(',');
      const items = Array.from({ length: 5_000 }, (_, n) => `{"code":"A${n}","description":"d",${extra}}`);
      const text = `[${items.join(',')}]`;
      const timed = await post(tenant, text);
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
      // What the event loop does for this body is bounded by the answer: the check ran in a worker
      // thread, and the answer serialised here is cut at 50,000 problems.
      assert.equal(timed.workerTasks, 1, 'the body was checked in a worker thread');
      assert.ok(timed.text.length < 4 * ONE_MIB, `answer of ${timed.text.length} bytes`);
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
