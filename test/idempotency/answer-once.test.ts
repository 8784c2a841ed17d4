import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Answer, answerOnce } from '../../src/idempotency/answer-once.js';
import { IdempotencyKeyInProgress } from '../../src/idempotency/idempotency-errors.js';
import { backends, newTenant } from '../helpers/backends.js';

/*
 * The 409 of a key whose first request is still running in this process (issue 22 item 9). Over HTTP
 * the second request's timing cannot be held still; here the first request's work waits on a promise
 * the test releases, so the second one arrives, by construction, while the first one runs. On PGlite
 * (one connection) only the process's own set of running keys can answer 409: without it the second
 * request writes and keeps its own answer, and the first one then replays it.
 */

const settings = { ttlSeconds: 60 };

/** A prepare step that waits until release() is called, then answers 201 with `body`. */
function heldWork(body: string) {
  let release!: () => void;
  let started!: () => void;
  const running = new Promise<void>((done) => {
    started = done;
  });
  const released = new Promise<void>((done) => {
    release = done;
  });
  const prepare = async () => {
    started();
    await released;
    return async (): Promise<Answer> => ({ status: 201, body });
  };
  return { prepare, running, release };
}

for (const backend of backends()) {
  describe(`a key still running, on ${backend.name}`, () => {
    test('a second request with the key gets 409 while the first runs; after it, a replay', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      const request = { tenantId, key: 'order-1', requestHash: 'h1' };
      const first = heldWork('{"first":true}');
      const firstAnswer = answerOnce(db, request, settings, first.prepare);
      await first.running;

      const second = heldWork('{"second":true}');
      second.release();
      await assert.rejects(answerOnce(db, request, settings, second.prepare), (error: unknown) => {
        assert.ok(error instanceof IdempotencyKeyInProgress);
        assert.equal(error.retryAfterSeconds, 1);
        return true;
      });

      first.release();
      assert.deepEqual(await firstAnswer, {
        answer: { status: 201, body: '{"first":true}' },
        replayed: false,
      });
      const third = heldWork('{"third":true}');
      third.release();
      assert.deepEqual(await answerOnce(db, request, settings, third.prepare), {
        answer: { status: 201, body: '{"first":true}' },
        replayed: true,
      });
    });

    test('the same key of another tenant, or another key, is not held back', async () => {
      const db = await backend.db();
      const tenantId = await newTenant(db);
      const otherTenant = await newTenant(db);
      const first = heldWork('{"n":1}');
      const firstAnswer = answerOnce(db, { tenantId, key: 'k', requestHash: 'h' }, settings, first.prepare);
      await first.running;
      for (const request of [
        { tenantId: otherTenant, key: 'k', requestHash: 'h' },
        { tenantId, key: 'k2', requestHash: 'h' },
      ]) {
        const other = heldWork('{"n":2}');
        other.release();
        const { replayed } = await answerOnce(db, request, settings, other.prepare);
        assert.equal(replayed, false);
      }
      first.release();
      assert.equal((await firstAnswer).replayed, false);
    });
  });
}
