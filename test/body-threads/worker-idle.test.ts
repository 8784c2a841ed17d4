import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
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

test('once told (as the embedded default is), threads end as soon as they are idle', async () => {
  // A pool made before endWorkersWhenIdle keeps its setting: this file's pool is made after it.
  assert.equal(workerThreads(), 0, 'no thread before the first large body');
  endWorkersWhenIdle();
  const checked = await checkBody(customers, body(), Number.POSITIVE_INFINITY, NO_OPTIONS);
  assert.equal(checked.errors.length, 0);
  // Ended within moments of its task (the default keeps it 5 s): waited for by looking, not by a timer's length.
  for (let look = 0; look < 200 && workerThreads() > 0; look++) await sleep(10);
  assert.equal(workerThreads(), 0, 'the thread ended once idle');
  // A new body starts a new thread, which ends again.
  await checkBody(customers, body(), Number.POSITIVE_INFINITY, NO_OPTIONS);
  for (let look = 0; look < 200 && workerThreads() > 0; look++) await sleep(10);
  assert.equal(workerThreads(), 0);
});
