import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { FORM, tokenForm } from '../../kit/token.js';
import { buildApp } from '../../src/app.js';
import { HashingBusy, HashingGate, secretHashing } from '../../src/auth/hashing-gate.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { metricValue } from '../helpers/metrics.js';

/*
 * The hashing gate of POST /token (src/auth/hashing-gate.ts) holds: at most `concurrency` hashes run
 * at once, the others wait and start in arrival order as places free, past `maxWaiting` waiting or
 * past `perCaller` places of one caller run() refuses at once with HashingBusy (without calling the
 * task), while another caller still gets a place; a failing task frees its place. Then through the
 * app: with the process's gate full, a token request beyond its bounds (one address past its share,
 * then anyone past the queue) is answered 503 `temporarily_unavailable` with Retry-After at once,
 * while the requests within the bounds wait, hash only once a slot is free and get their tokens.
 * The per-address failure throttles never come into play here (right secrets, few per address), so
 * only the gate can refuse. Proved by counting and ordering: tasks end when the test says so, and
 * the app's requests are held in the gate by slots the test takes itself; no timers.
 */

const turn = () => new Promise((done) => setImmediate(done));

/** Tasks ended by hand: which started, in what order, and how many ran at once. */
class Tasks {
  readonly started: string[] = [];
  running = 0;
  mostRunning = 0;
  readonly #ends = new Map<string, { resolve: (value: string) => void; reject: (error: Error) => void }>();

  /** A task that counts as running from the gate's call until finish() or fail() ends it. */
  task(name: string): () => Promise<string> {
    return () => {
      this.started.push(name);
      this.running++;
      this.mostRunning = Math.max(this.mostRunning, this.running);
      return new Promise<string>((resolve, reject) => this.#ends.set(name, { resolve, reject })).finally(
        () => {
          this.running--;
        },
      );
    };
  }

  finish(name: string): void {
    this.#end(name).resolve(name);
  }

  fail(name: string, error: Error): void {
    this.#end(name).reject(error);
  }

  #end(name: string) {
    const end = this.#ends.get(name);
    if (!end) throw new Error(`task ${name} has not started`);
    return end;
  }
}

type Outcome<T> =
  | { state: 'pending' }
  | { state: 'fulfilled'; value: T }
  | { state: 'rejected'; reason: unknown };

/** What the promise has become once everything already under way has had its turn. */
async function outcomeAfterTurn<T>(promise: Promise<T>): Promise<Outcome<T>> {
  let outcome: Outcome<T> = { state: 'pending' };
  promise.then(
    (value) => {
      outcome = { state: 'fulfilled', value };
    },
    (reason: unknown) => {
      outcome = { state: 'rejected', reason };
    },
  );
  await turn();
  return outcome;
}

/** Refused at once: rejected with HashingBusy (Retry-After 1 s) before anything else ended. */
async function assertRefusedAtOnce(run: Promise<unknown>, what: string): Promise<void> {
  const outcome = await outcomeAfterTurn(run);
  assert.equal(outcome.state, 'rejected', `${what}: ${JSON.stringify(outcome)}`);
  const { reason } = outcome as { reason: unknown };
  assert.ok(reason instanceof HashingBusy, `${what}: ${String(reason)}`);
  assert.equal(reason.retryAfterSeconds, 1);
}

/** Accepted: neither refused nor run yet, waiting for a place. */
async function assertWaiting(run: Promise<unknown>, what: string): Promise<void> {
  assert.deepEqual(await outcomeAfterTurn(run), { state: 'pending' }, what);
}

describe('HashingGate', () => {
  test('at most `concurrency` tasks run at once; the others wait and start as places free', async () => {
    const gate = new HashingGate({ concurrency: 2, maxWaiting: 10, perCaller: 10 });
    const tasks = new Tasks();
    const names = ['a', 'b', 'c', 'd', 'e'];
    const runs = names.map((name) => gate.run(`caller-${name}`, tasks.task(name)));
    await turn();
    assert.deepEqual(tasks.started, ['a', 'b']);
    assert.equal(tasks.running, 2);
    assert.deepEqual([gate.running, gate.waiting], [2, 3]);

    tasks.finish('a');
    await turn();
    assert.deepEqual(tasks.started, ['a', 'b', 'c']);
    assert.equal(tasks.running, 2);
    assert.deepEqual([gate.running, gate.waiting], [2, 2]);

    for (const name of ['b', 'c', 'd', 'e']) {
      tasks.finish(name);
      await turn();
      assert.ok(tasks.running <= 2, `after ${name}: ${tasks.running} running`);
    }
    assert.deepEqual(await Promise.all(runs), names);
    assert.equal(tasks.mostRunning, 2);
    assert.deepEqual([gate.running, gate.waiting], [0, 0]);
  });

  test('waiting tasks start in arrival order, whichever running task ends first', async () => {
    const gate = new HashingGate({ concurrency: 2, maxWaiting: 10, perCaller: 10 });
    const tasks = new Tasks();
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    // Half of them from one caller: the order is the arrival's, not the caller's.
    const runs = names.map((name, n) => gate.run(n % 2 ? 'one' : `caller-${name}`, tasks.task(name)));
    await turn();
    assert.deepEqual(tasks.started, ['a', 'b']);
    for (const [ends, starts] of [
      ['b', 'c'],
      ['c', 'd'],
      ['a', 'e'],
      ['e', 'f'],
    ] as const) {
      tasks.finish(ends);
      await turn();
      assert.equal(tasks.started.at(-1), starts, `${ends} ended: ${starts} is next`);
      assert.equal(tasks.running, 2);
    }
    tasks.finish('d');
    tasks.finish('f');
    assert.deepEqual(await Promise.all(runs), names);
    assert.deepEqual(tasks.started, names);
    assert.equal(tasks.mostRunning, 2);
  });

  test('past `maxWaiting` waiting, run() refuses at once with HashingBusy and never calls the task', async () => {
    const gate = new HashingGate({ concurrency: 2, maxWaiting: 2, perCaller: 10 });
    const tasks = new Tasks();
    const a = gate.run('a', tasks.task('a'));
    const b = gate.run('b', tasks.task('b'));
    const c = gate.run('c', tasks.task('c'));
    const d = gate.run('d', tasks.task('d'));
    await assertWaiting(d, 'd fills the last waiting place');
    assert.deepEqual([gate.running, gate.waiting], [2, 2]);

    await assertRefusedAtOnce(gate.run('e', tasks.task('e')), 'e, past the queue');
    assert.deepEqual([gate.running, gate.waiting], [2, 2], 'the refusal took no place');

    tasks.finish('a');
    await turn();
    assert.deepEqual(tasks.started, ['a', 'b', 'c']);
    const f = gate.run('f', tasks.task('f'));
    await assertWaiting(f, 'f takes the waiting place c left');
    await assertRefusedAtOnce(gate.run('g', tasks.task('g')), 'g, past the queue again');

    for (const name of ['b', 'c', 'd', 'f']) {
      tasks.finish(name);
      await turn();
    }
    assert.deepEqual(await Promise.all([a, b, c, d, f]), ['a', 'b', 'c', 'd', 'f']);
    assert.deepEqual(tasks.started, ['a', 'b', 'c', 'd', 'f'], 'the refused tasks never ran');
    assert.equal(tasks.mostRunning, 2);
    assert.deepEqual([gate.running, gate.waiting], [0, 0]);
  });

  test('one caller holds at most `perCaller` places, running or waiting; another caller still gets one', async () => {
    const gate = new HashingGate({ concurrency: 1, maxWaiting: 10, perCaller: 2 });
    const tasks = new Tasks();
    const a1 = gate.run('A', tasks.task('a1'));
    const a2 = gate.run('A', tasks.task('a2'));
    await assertWaiting(a2, "A's second waits");
    await assertRefusedAtOnce(gate.run('A', tasks.task('a3')), "A's third, with 9 waiting places free");
    const b1 = gate.run('B', tasks.task('b1'));
    await assertWaiting(b1, 'B gets a place while A is refused');
    assert.deepEqual([gate.running, gate.waiting], [1, 2]);

    tasks.finish('a1');
    await turn();
    assert.deepEqual(tasks.started, ['a1', 'a2']);
    // a1's place is A's again.
    const a4 = gate.run('A', tasks.task('a4'));
    await assertWaiting(a4, 'A comes back once a place of its own is free');
    await assertRefusedAtOnce(gate.run('A', tasks.task('a5')), 'A at its bound again');

    for (const name of ['a2', 'b1', 'a4']) {
      tasks.finish(name);
      await turn();
    }
    assert.deepEqual(await Promise.all([a1, a2, b1, a4]), ['a1', 'a2', 'b1', 'a4']);
    assert.deepEqual(tasks.started, ['a1', 'a2', 'b1', 'a4']);
    assert.deepEqual([gate.running, gate.waiting], [0, 0]);
  });

  test('a failing task frees its place: the next waiting one starts and its caller may come back', async () => {
    const gate = new HashingGate({ concurrency: 1, maxWaiting: 1, perCaller: 1 });
    const tasks = new Tasks();
    const a1 = gate.run('A', tasks.task('a1'));
    const b1 = gate.run('B', tasks.task('b1'));
    await assertWaiting(b1, 'B waits');
    await assertRefusedAtOnce(gate.run('C', tasks.task('c1')), 'C, the gate full');
    await assertRefusedAtOnce(gate.run('A', tasks.task('a0')), 'A, at its bound');

    tasks.fail('a1', new Error('scrypt failed'));
    await assert.rejects(
      a1,
      (error: Error) => !(error instanceof HashingBusy) && error.message === 'scrypt failed',
    );
    await turn();
    assert.deepEqual(tasks.started, ['a1', 'b1']);
    assert.deepEqual([gate.running, gate.waiting], [1, 0]);
    const a2 = gate.run('A', tasks.task('a2'));
    await assertWaiting(a2, 'A has its place back');

    // A task that throws before returning a promise frees its place too.
    tasks.finish('b1');
    await turn();
    assert.deepEqual(tasks.started, ['a1', 'b1', 'a2']);
    const thrown = gate.run('C', () => {
      throw new Error('thrown at once');
    });
    await assertWaiting(thrown, 'C waits behind a2');
    tasks.finish('a2');
    await assert.rejects(thrown, { message: 'thrown at once' });
    assert.deepEqual([gate.running, gate.waiting], [0, 0]);
    const c2 = gate.run('C', tasks.task('c2'));
    await turn();
    assert.deepEqual(tasks.started, ['a1', 'b1', 'a2', 'c2'], 'C runs at once on the free gate');
    tasks.finish('c2');
    assert.deepEqual(await Promise.all([b1, a2, c2]), ['b1', 'a2', 'c2']);
    assert.deepEqual([gate.running, gate.waiting], [0, 0]);
  });
});

function tokenRequest(app: FastifyInstance, client: NewTenant, remoteAddress: string) {
  return app.inject({
    method: 'POST',
    url: '/token',
    remoteAddress,
    headers: { 'content-type': FORM },
    payload: tokenForm(client),
  });
}

/**
 * Turns until the process's gate holds `count` waiting, or until every request of `sent` is answered
 * (a gate that does not hold them): by count, with no deadline.
 */
async function untilWaiting(count: number, sent: readonly Promise<unknown>[]): Promise<void> {
  let answered = false;
  void Promise.allSettled(sent).then(() => {
    answered = true;
  });
  while (secretHashing.waiting < count && !answered) await turn();
}

type Answer = Awaited<ReturnType<typeof tokenRequest>>;

/**
 * The answer to a request the gate should refuse at once. Turns until it is answered, or until the
 * gate holds one more waiting than before (queued instead of refused): a failure then, not a hang.
 */
async function answeredAtOnce(request: Promise<Answer>, what: string): Promise<Answer> {
  const waitingBefore = secretHashing.waiting;
  let outcome: Outcome<Answer> = { state: 'pending' };
  request.then(
    (value) => {
      outcome = { state: 'fulfilled', value };
    },
    (reason: unknown) => {
      outcome = { state: 'rejected', reason };
    },
  );
  while (outcome.state === 'pending' && secretHashing.waiting <= waitingBefore) await turn();
  assert.notEqual(
    outcome.state,
    'pending',
    `${what}: queued (${secretHashing.waiting} waiting), not refused`,
  );
  return request;
}

/** 503 temporarily_unavailable with Retry-After, in the OAuth error shape /token answers in (RFC 6749 5.2). */
function assertBusy(answer: Answer, what: string): void {
  assert.equal(answer.statusCode, 503, `${what}: ${answer.statusCode} ${answer.body}`);
  assert.equal(answer.headers['retry-after'], '1', what);
  assert.equal(answer.headers['cache-control'], 'no-store', what);
  assert.deepEqual(
    answer.json(),
    {
      error: 'temporarily_unavailable',
      error_description: 'Too many token requests being checked; try again in 1 s',
    },
    what,
  );
}

function assertToken(answer: Answer, what: string): void {
  assert.equal(answer.statusCode, 200, `${what}: ${answer.statusCode} ${answer.body}`);
  const body = answer.json();
  assert.equal(typeof body.access_token, 'string', what);
  assert.equal(body.token_type, 'Bearer', what);
}

for (const backend of backends()) {
  describe(`POST /token behind the hashing gate on ${backend.name}`, () => {
    test('beyond the gate 503 with Retry-After at once; within it the requests wait, then get their tokens', async () => {
      // The process's gate, sized from UV_THREADPOOL_SIZE and the cores (2, 16 and 2 by default).
      const { concurrency, maxWaiting, perCaller } = secretHashing;
      assert.ok(maxWaiting > perCaller, JSON.stringify({ concurrency, maxWaiting, perCaller }));
      assert.deepEqual([secretHashing.running, secretHashing.waiting], [0, 0], 'the gate starts empty');
      const db = await backend.db();
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => app.close());
      const tenant = await createTenant(db, `gate-${randomUUID()}`);
      // Warm-up: the decoy hash and the signing key exist before the gate is filled.
      assertToken(await tokenRequest(app, tenant, '192.0.2.250'), 'warm-up');
      const hashedBefore = await metricValue(app, 'sfa_client_secret_hashes_total');

      // Every hashing slot taken by the test: the app's requests can only wait, or be refused.
      const releases: Array<() => void> = [];
      const held = Array.from({ length: concurrency }, (_, n) =>
        secretHashing.run(`test-holder-${n}`, () => new Promise<void>((release) => releases.push(release))),
      );
      await turn();

      // One address takes its share of places; one more from it is refused while the queue has room.
      const first = '192.0.2.1';
      const queued = Array.from({ length: perCaller }, () => tokenRequest(app, tenant, first));
      await untilWaiting(perCaller, queued);
      const beyondShare = `request ${perCaller + 1} from one address`;
      assertBusy(await answeredAtOnce(tokenRequest(app, tenant, first), beyondShare), beyondShare);
      assert.deepEqual([secretHashing.running, secretHashing.waiting], [concurrency, perCaller]);

      // Other addresses fill the rest of the queue, each within its share.
      for (let n = perCaller; n < maxWaiting; n++) {
        const address = `198.18.${Math.floor(n / perCaller) >> 8}.${Math.floor(n / perCaller) & 255}`;
        queued.push(tokenRequest(app, tenant, address));
      }
      await untilWaiting(maxWaiting, queued);
      const beyondQueue = 'a new address, the queue full';
      assertBusy(await answeredAtOnce(tokenRequest(app, tenant, '192.0.2.2'), beyondQueue), beyondQueue);
      assert.deepEqual([secretHashing.running, secretHashing.waiting], [concurrency, maxWaiting]);
      assert.equal(
        (await metricValue(app, 'sfa_client_secret_hashes_total')) - hashedBefore,
        0,
        'nothing hashed while the test holds every slot; the refused requests hashed nothing',
      );

      // The slots freed: every request within the bounds hashes in its turn and gets its token.
      for (const release of releases) release();
      await Promise.all(held);
      const answers = await Promise.all(queued);
      answers.forEach((answer, n) => {
        assertToken(answer, `queued request ${n}`);
      });
      assert.equal(
        (await metricValue(app, 'sfa_client_secret_hashes_total')) - hashedBefore,
        maxWaiting,
        'one hash per request within the bounds',
      );
      assert.deepEqual([secretHashing.running, secretHashing.waiting], [0, 0]);
      assertToken(await tokenRequest(app, tenant, first), 'the refused address, places free again');
    });
  });
}
