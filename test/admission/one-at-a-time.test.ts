import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OneAtATime } from '../../src/admission/one-at-a-time.js';

/** Work that records when it starts and ends, and ends when released. */
function gated(log: string[], name: string) {
  let release: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    release: () => release(),
    work: async () => {
      log.push(`${name} start`);
      await done;
      log.push(`${name} end`);
      return name;
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('one key: one at a time, in arrival order; other keys side by side', async () => {
  const turns = new OneAtATime<number>();
  const log: string[] = [];
  const a1 = gated(log, 'a1');
  const a2 = gated(log, 'a2');
  const b1 = gated(log, 'b1');
  const runs = [turns.run(1, a1.work), turns.run(1, a2.work), turns.run(2, b1.work)];
  await tick();
  assert.deepEqual(log, ['a1 start', 'b1 start'], 'a2 waits for a1; b1 does not');
  a2.release();
  await tick();
  assert.deepEqual(log, ['a1 start', 'b1 start'], 'released early, a2 still waits for its turn');
  a1.release();
  b1.release();
  assert.deepEqual(await Promise.all(runs), ['a1', 'a2', 'b1']);
  assert.deepEqual(log.indexOf('a1 end') < log.indexOf('a2 start'), true);
  assert.equal(turns.size, 0, 'keys are forgotten once idle');
});

test('a failure ends its own turn only', async () => {
  const turns = new OneAtATime<string>();
  const failing = turns.run('k', async () => {
    throw new Error('boom');
  });
  const next = turns.run('k', async () => 'next');
  await assert.rejects(failing, /boom/);
  assert.equal(await next, 'next');
  assert.equal(turns.size, 0);
});
