import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { keepLease, renewEveryMs, TAKEOVER_LEASE_SECONDS } from '../../src/background/lease-timing.js';

/*
 * A lease kept while its work runs (src/background/lease-timing.ts,
 * docs/decisions/0141-leases-within-ten-seconds.md), on mocked timers: time passes without waiting.
 */

beforeEach(() => mock.timers.enable({ apis: ['setInterval'] }));
afterEach(() => mock.timers.reset());

/** Time passes by `ms`, 100 ms at a time, and the renewals it starts settle as they would. */
async function pass(ms: number): Promise<void> {
  for (let at = 0; at < ms || at === 0; at += 100) {
    mock.timers.tick(Math.min(100, ms - at));
    for (let turn = 0; turn < 5; turn++) await nextTurn();
  }
}

test('a dead holder is replaced within 10 s: the lease plus a round of claims fits', () => {
  assert.ok(TAKEOVER_LEASE_SECONDS + 1 < 10, 'the lease and a job round (1 s) stay within 10 s');
  assert.equal(renewEveryMs(TAKEOVER_LEASE_SECONDS), 2667, 'renewed every third of the lease');
});

test('renewed every period while the work runs, until stopped', async () => {
  let renewals = 0;
  const lease = keepLease(async () => {
    renewals++;
    return true;
  }, 1_000);
  await pass(999);
  assert.equal(renewals, 0);
  await pass(1);
  assert.equal(renewals, 1);
  await pass(3_000);
  assert.equal(renewals, 4);
  assert.equal(lease.lost, false);
  lease.stop();
  await pass(5_000);
  assert.equal(renewals, 4, 'no renewal after the work ended');
});

test("a renewal that finds the lease another's marks it lost, aborts the signal and renews no more", async () => {
  let held = true;
  let renewals = 0;
  const lease = keepLease(async () => {
    renewals++;
    return held;
  }, 1_000);
  await pass(1_000);
  assert.equal(lease.lost, false);
  held = false;
  await pass(1_000);
  assert.equal(lease.lost, true);
  assert.equal(lease.signal.aborted, true);
  await pass(3_000);
  assert.equal(renewals, 2, 'a lost lease is not renewed again');
});

test('a renewal that fails (the database away) is tried again; it does not lose the lease', async () => {
  const answers: (boolean | Error)[] = [new Error('connection refused'), new Error('timeout'), true];
  const lease = keepLease(async () => {
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return answer ?? true;
  }, 1_000);
  await pass(3_000);
  assert.equal(answers.length, 0, 'tried at every period');
  assert.equal(lease.lost, false);
  assert.equal(lease.signal.aborted, false);
  lease.stop();
});

test('a renewal still under way when the work lets its lease go is not a loss', async () => {
  let answer!: (held: boolean) => void;
  const lease = keepLease(
    () =>
      new Promise<boolean>((done) => {
        answer = done;
      }),
    1_000,
  );
  await pass(1_000);
  lease.stop();
  // The work released its row: the renewal under way finds it no longer held.
  answer(false);
  await pass(0);
  assert.equal(lease.lost, false);
  assert.equal(lease.signal.aborted, false);
});

test('one renewal at a time: a slow one is not doubled by the next period', async () => {
  let calls = 0;
  let answer!: (held: boolean) => void;
  const lease = keepLease(() => {
    calls++;
    return new Promise<boolean>((done) => {
      answer = done;
    });
  }, 1_000);
  await pass(3_000);
  assert.equal(calls, 1);
  answer(true);
  await pass(1_000);
  assert.equal(calls, 2);
  lease.stop();
});
