import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { NO_OPTIONS } from '../../src/batch/batch-options.js';
import {
  checkBody,
  endWorkersWhenIdle,
  WORKER_BODY_BYTES,
  workerThreads,
} from '../../src/body-threads/batch-worker-pool.js';
import { customers } from '../../src/resources/customers.js';
import { validItem } from '../helpers/batch-items.js';

/*
 * The worker threads' life (src/body-threads/batch-worker-pool.ts). Each test file runs in a process of its
 * own, so the pool here is this file's. By default a thread is kept 5 s between bodies (for a stream
 * of batches); as the embedded default's serve sets it, it ends as soon as it is idle, so its heap
 * does not carry one large body's garbage into the next.
 */

const body = () => {
  const items = Array.from({ length: 2_000 }, (_, n) => validItem(customers, n));
  const bytes = Buffer.from(JSON.stringify(items));
  assert.ok(bytes.length >= WORKER_BODY_BYTES, 'a body the worker takes');
  return bytes;
};

/**
 * Gives the event loop turns, the clock of timers frozen (mock timers: no idle time passes), until
 * every thread ended; a few turns do (the idle handler is set with the task's answer), whatever the
 * machine's speed. Answers the threads still alive.
 */
async function threadsLeftWithNoTimePassing(): Promise<number> {
  for (let turn = 0; turn < 100 && workerThreads() > 0; turn++) {
    mock.timers.tick(0);
    await nextTurn();
  }
  return workerThreads();
}

test('once told (as the embedded default is), threads end as soon as they are idle', async () => {
  // A pool made before endWorkersWhenIdle keeps its setting: this file's pool is made after it.
  assert.equal(workerThreads(), 0, 'no thread before the first large body');
  endWorkersWhenIdle();
  // The idle keep is a timer: with the clock frozen, a thread that ends does so with no idle time
  // passed at all, where the default would keep it until 5 s of the clock had.
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const checked = await checkBody(customers, body(), Number.POSITIVE_INFINITY, NO_OPTIONS);
    assert.equal(checked.errors.length, 0);
    assert.equal(await threadsLeftWithNoTimePassing(), 0, 'the thread ended once idle');
    // A new body starts a new thread, which ends again.
    await checkBody(customers, body(), Number.POSITIVE_INFINITY, NO_OPTIONS);
    assert.equal(await threadsLeftWithNoTimePassing(), 0);
  } finally {
    mock.timers.reset();
  }
});
