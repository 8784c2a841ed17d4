import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { tenantClient } from '../../kit/tenant-client.js';
import { injectTransport } from '../../kit/transport.js';
import { DEFAULT_ADMISSION, LIGHT_PLACES_MAX } from '../../src/admission/admission-limits.js';
import {
  admissionFor,
  BatchAdmission,
  BatchNotAdmitted,
  type BatchTicket,
} from '../../src/admission/batch-admission.js';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { problemOf } from '../../src/http/domain-problems.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { metricValue } from '../helpers/metrics.js';

/** The refusal is answered with this status and a Retry-After of at least a second. */
function answers(error: BatchNotAdmitted, status: number): boolean {
  const problem = problemOf(error);
  return problem?.statusCode === status && Number(problem.headers['retry-after']) >= 1;
}

/*
 * Batch work is admitted a bounded number at a time, per tenant and in all, the
 * places given in turn to the tenants waiting. Not timed: the figures are bench/fairness.ts's.
 */

const limits = {
  running: 1,
  runningPerTenant: 1,
  waitingPerTenant: 4,
  maxWaitMs: 10_000,
  heldBytes: 1 << 30,
  lightBytes: 1_000,
};
/** Body sizes below and at the light bound. */
const LIGHT = 100;
const HEAVY = 1_000;

/** Records the order in which tickets are admitted. */
function watch(ticket: BatchTicket, name: string, order: string[]): BatchTicket {
  ticket.admitted.then(
    () => order.push(name),
    () => order.push(`${name} refused`),
  );
  return ticket;
}

/** Ends a ticket's life as a request would: its work done, its answer sent. */
const finish = async (ticket: BatchTicket) => {
  await ticket.run(async () => {});
  ticket.closed();
};

const turn = () => new Promise((done) => setImmediate(done));

describe('batch admission', () => {
  test('a free place goes to the tenant served longest ago, not to the oldest batch', async () => {
    const admission = new BatchAdmission(limits);
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    const a2 = watch(admission.enter(1, LIGHT), 'a2', order);
    const a3 = watch(admission.enter(1, LIGHT), 'a3', order);
    const b1 = watch(admission.enter(2, LIGHT), 'b1', order);
    await turn();
    assert.deepEqual(order, ['a1']);
    assert.deepEqual(admission.counts, { running: 1, waiting: 3 });
    await finish(a1);
    await turn();
    assert.deepEqual(order, ['a1', 'b1'], 'B waited behind one batch of A, not three');
    await finish(b1);
    await turn();
    await finish(a2);
    await turn();
    await finish(a3);
    assert.deepEqual(order, ['a1', 'b1', 'a2', 'a3']);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('a tenant alone gets every free place, past its own bound', async () => {
    const admission = new BatchAdmission({ ...limits, running: 3 });
    const order: string[] = [];
    const tickets = [1, 2, 3, 4].map((n) => watch(admission.enter(1, LIGHT), `a${n}`, order));
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'a3'], 'no place stays free while A waits');
    assert.deepEqual(admission.counts, { running: 3, waiting: 1 });
    await finish(tickets[0]!);
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'a3', 'a4']);
    for (const ticket of tickets.slice(1)) await finish(ticket);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('once another tenant waits, the next free place is its, and the first tenant is back at its bound', async () => {
    const admission = new BatchAdmission({ ...limits, running: 2 });
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    const a2 = watch(admission.enter(1, LIGHT), 'a2', order);
    const a3 = watch(admission.enter(1, LIGHT), 'a3', order);
    const b1 = watch(admission.enter(2, LIGHT), 'b1', order);
    await turn();
    assert.deepEqual(order, ['a1', 'a2'], 'A alone took both places; a3 and b1 wait');
    // A batch of A arriving now waits too: B is waiting and A is past its bound.
    const a4 = watch(admission.enter(1, LIGHT), 'a4', order);
    await finish(a1);
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'b1'], 'the place went to B, not to a3 or a4');
    await finish(a2);
    await turn();
    assert.deepEqual(
      order,
      ['a1', 'a2', 'b1', 'a3'],
      'with nobody else waiting, A gets the free place again',
    );
    await finish(b1);
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'b1', 'a3', 'a4'], 'and, alone again, both places');
    await finish(a3);
    await finish(a4);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test("a lone tenant's heavy batches stay at its bound; another tenant's heavy batch takes the free place", async () => {
    const admission = new BatchAdmission({ ...limits, running: 2 });
    const order: string[] = [];
    const a1 = watch(admission.enter(1, HEAVY), 'a1', order);
    const a2 = watch(admission.enter(1, HEAVY), 'a2', order);
    const a3 = watch(admission.enter(1, LIGHT), 'a3', order);
    await turn();
    assert.deepEqual(order, ['a1'], 'a2 waits though a place is free; a3 waits behind it');
    assert.deepEqual(admission.counts, { running: 1, waiting: 2 });
    const b1 = watch(admission.enter(2, HEAVY), 'b1', order);
    await turn();
    assert.deepEqual(order, ['a1', 'b1'], 'B below its bound: the free place at once');
    await finish(a1);
    await turn();
    assert.deepEqual(order, ['a1', 'b1', 'a2']);
    await finish(b1);
    await turn();
    assert.deepEqual(order, ['a1', 'b1', 'a2', 'a3'], 'past its bound, but light and nobody else waiting');
    await finish(a2);
    await finish(a3);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('light batches fill the places past the bound while no heavy batch waits', async () => {
    const admission = new BatchAdmission({ ...limits, running: 2, lightRunning: 4 });
    const order: string[] = [];
    const a = [1, 2, 3, 4, 5].map((n) => watch(admission.enter(1, LIGHT), `a${n}`, order));
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'a3', 'a4'], 'a lone tenant fills all four light places');
    assert.deepEqual(admission.counts, { running: 4, waiting: 1 });
    await finish(a[0]!);
    await turn();
    assert.deepEqual(
      order,
      ['a1', 'a2', 'a3', 'a4', 'a5'],
      'a freed light place goes to the waiting light batch',
    );
    // A heavy batch arrives: it needs a place within the two, and no light batch passes it meanwhile.
    const heavy = watch(admission.enter(1, HEAVY), 'heavy', order);
    const late = watch(admission.enter(2, LIGHT), 'b-light', order);
    await finish(a[1]!);
    await finish(a[2]!);
    await turn();
    assert.deepEqual(admission.counts, { running: 2, waiting: 2 }, 'the light places drain, none refilled');
    assert.equal(order.length, 5);
    await finish(a[3]!);
    await turn();
    assert.deepEqual(order.slice(5), ['b-light'], 'below its own bound, B takes the place within the two');
    await finish(a[4]!);
    await turn();
    assert.deepEqual(order.slice(5), ['b-light', 'heavy']);
    assert.deepEqual(admission.counts, { running: 2, waiting: 0 });
    const more = [1, 2, 3].map((n) => watch(admission.enter(1, LIGHT), `c${n}`, order));
    await turn();
    assert.deepEqual(
      order.slice(7),
      ['c1', 'c2'],
      'the heavy batch placed, light ones fill the places past two again',
    );
    for (const ticket of [heavy, late, ...more]) await finish(ticket);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('a heavy batch waiting past its time leaves, and the light places open again', async () => {
    const admission = new BatchAdmission({ ...limits, running: 1, lightRunning: 3, maxWaitMs: 20 });
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    const heavy = watch(admission.enter(1, HEAVY), 'heavy', order);
    const a2 = watch(admission.enter(1, LIGHT), 'a2', order);
    await turn();
    assert.deepEqual(order, ['a1'], 'a2 waits: a heavy batch waits before it');
    await assert.rejects(heavy.admitted, BatchNotAdmitted);
    await turn();
    assert.deepEqual(
      order,
      ['a1', 'heavy refused', 'a2'],
      'with no heavy batch waiting, a2 takes a light place',
    );
    await finish(a1);
    await finish(a2);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('the light places: every database connection but two, at most eight and four per place, never fewer than the places', () => {
    const lightPlaces = (connections: number, batchConcurrency?: number) => {
      const admission = admissionFor(batchConcurrency ? { batchConcurrency } : {}, () => connections);
      const tickets = Array.from({ length: 12 }, () => admission.enter(1, LIGHT));
      const running = admission.counts.running;
      for (const ticket of tickets) {
        ticket.admitted.catch(() => {});
        ticket.closed();
      }
      assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
      return running;
    };
    assert.equal(lightPlaces(1), DEFAULT_ADMISSION.running, 'PGlite: one connection, no place past the two');
    assert.equal(lightPlaces(10), 8);
    assert.equal(lightPlaces(6), 4);
    assert.equal(lightPlaces(100), LIGHT_PLACES_MAX);
    assert.equal(lightPlaces(4, 6), 6, 'BATCH_CONCURRENCY above the light places wins');
    assert.equal(lightPlaces(10, 1), 4, 'four light places per place of BATCH_CONCURRENCY');
  });

  test('the light places follow the connections the pool may open now', async () => {
    let connections = 10;
    const admission = admissionFor({}, () => connections);
    const order: string[] = [];
    const a = Array.from({ length: 12 }, (_, n) => watch(admission.enter(1, LIGHT), `a${n + 1}`, order));
    await turn();
    assert.equal(order.length, 8, 'ten connections: eight light places');
    // The server refused a connection as one too many: the pool may open three for a while.
    connections = 3;
    for (const ticket of a.slice(0, 8)) await finish(ticket);
    await turn();
    assert.deepEqual(
      admission.counts,
      { running: DEFAULT_ADMISSION.running, waiting: 2 },
      'three connections: no light place past the two, so two connections stay for reads',
    );
    // The pool back to its size: the next departure opens the light places again.
    connections = 10;
    await finish(a[8]!);
    await turn();
    assert.deepEqual(admission.counts, { running: 3, waiting: 0 });
    for (const ticket of a.slice(9)) await finish(ticket);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('when every waiting tenant is at its bound, a free place still goes to one of them', async () => {
    const admission = new BatchAdmission({ ...limits, running: 3 });
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    const a2 = watch(admission.enter(1, LIGHT), 'a2', order);
    const a3 = watch(admission.enter(1, LIGHT), 'a3', order);
    const b1 = watch(admission.enter(2, LIGHT), 'b1', order);
    const b2 = watch(admission.enter(2, LIGHT), 'b2', order);
    const a4 = watch(admission.enter(1, LIGHT), 'a4', order);
    await finish(a1);
    await turn();
    assert.deepEqual(order, ['a1', 'a2', 'a3', 'b1']);
    await finish(a2);
    await turn();
    // A holds one place (its bound), B one (its bound), both wait: the place goes past a bound, to
    // the tenant served longest ago (A, last served before B's b1).
    assert.deepEqual(order, ['a1', 'a2', 'a3', 'b1', 'a4']);
    assert.deepEqual(admission.counts, { running: 3, waiting: 1 });
    for (const ticket of [a3, b1, a4, b2]) await finish(ticket);
    assert.deepEqual(order, ['a1', 'a2', 'a3', 'b1', 'a4', 'b2']);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('past the tenant waiting bound: 429 with Retry-After at once; other tenants still wait', () => {
    const admission = new BatchAdmission({ ...limits, waitingPerTenant: 2 });
    const tickets = [admission.enter(1, LIGHT), admission.enter(1, LIGHT), admission.enter(1, LIGHT)];
    assert.throws(
      () => admission.enter(1, LIGHT),
      (error) =>
        error instanceof BatchNotAdmitted &&
        error.reason === 'queueFull' &&
        error.retryAfterSeconds >= 1 &&
        answers(error, 429),
    );
    tickets.push(admission.enter(2, LIGHT));
    assert.deepEqual(admission.counts, { running: 1, waiting: 3 });
    for (const ticket of tickets) {
      ticket.admitted.catch(() => {});
      ticket.closed();
    }
  });

  test('a batch that waited too long: 503 with Retry-After, and it leaves the queue', async () => {
    const admission = new BatchAdmission({ ...limits, maxWaitMs: 20 });
    const first = admission.enter(1, LIGHT);
    const late = admission.enter(1, LIGHT);
    await assert.rejects(
      late.admitted,
      (error) =>
        error instanceof BatchNotAdmitted &&
        error.reason === 'busy' &&
        error.retryAfterSeconds >= 1 &&
        answers(error, 503),
    );
    assert.deepEqual(admission.counts, { running: 1, waiting: 0 });
    first.closed();
  });

  test('a client gone while waiting leaves the queue; the place goes to the next', async () => {
    const admission = new BatchAdmission(limits);
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    const gone = watch(admission.enter(2, LIGHT), 'gone', order);
    const b2 = watch(admission.enter(3, LIGHT), 'b2', order);
    gone.closed();
    await finish(a1);
    await turn();
    assert.deepEqual(order, ['a1', 'gone refused', 'b2']);
    await finish(b2);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('the place is kept until the work is done, even when the client went away first', async () => {
    const admission = new BatchAdmission(limits);
    const order: string[] = [];
    const a1 = watch(admission.enter(1, LIGHT), 'a1', order);
    watch(admission.enter(2, LIGHT), 'b1', order);
    await a1.admitted;
    let endWork!: () => void;
    const working = a1.run(() => new Promise<void>((done) => (endWork = done)));
    a1.closed();
    await turn();
    assert.deepEqual(order, ['a1'], 'the connection closed but the batch is still being written');
    endWork();
    await working;
    await turn();
    assert.deepEqual(order, ['a1', 'b1']);
  });

  test('a client gone after its place was given but before its work: the work is refused, not run', async () => {
    const admission = new BatchAdmission(limits);
    const a1 = admission.enter(1, LIGHT);
    await a1.admitted;
    a1.closed();
    let ran = false;
    await assert.rejects(
      a1.run(async () => {
        ran = true;
      }),
      (error: unknown) => error instanceof BatchNotAdmitted && error.reason === 'busy' && answers(error, 503),
    );
    assert.equal(ran, false);
    assert.deepEqual(admission.counts, { running: 0, waiting: 0 });
  });

  test('bodies held past the byte budget are refused, unless one would be held alone', () => {
    const admission = new BatchAdmission({ ...limits, heldBytes: 1_000 });
    assert.equal(admission.holdBytes(1_000), true, 'one body larger than the budget, held alone');
    assert.equal(admission.holdBytes(500, 1_000), true, 'its own next chunk');
    assert.equal(admission.holdBytes(10), false, 'another body');
    admission.releaseBytes(1_500);
    assert.equal(admission.holdBytes(600), true);
    assert.equal(admission.holdBytes(400), true);
    assert.equal(admission.holdBytes(1), false);
    admission.releaseBytes(1_000);
    assert.equal(admission.heldBytes, 0);
  });
});

/** The JSON request headers of a new tenant of the app, with a token from its POST /token. */
async function headersOf(db: Database, app: FastifyInstance): Promise<Record<string, string>> {
  const tenant = await createTenant(db, `test-${randomUUID()}`);
  return {
    'content-type': 'application/json',
    ...(await tenantClient(injectTransport(app), tenant)).headers,
  };
}

const ITEMS = 3_000;
/**
 * A body past the light bound (256 KiB: about 330 KB here), so one place is one place: light bodies
 * may also fill the places past BATCH_CONCURRENCY, up to the pool's connections but two.
 */
const productBatch = (prefix: string) =>
  JSON.stringify(
    Array.from({ length: ITEMS }, (_, at) => ({ code: `${prefix}${at}`, description: 'p'.repeat(80) })),
  );

for (const backend of backends()) {
  describe(`batch admission in the app on ${backend.name}`, () => {
    test('one place, two waiting: a tenant flooding gets 201 or a clean 429, another tenant is served in between', async () => {
      const db = await backend.db();
      const app = await buildApp({
        db,
        config: {
          ...testAuthConfig,
          batchConcurrency: 1,
          batchConcurrencyPerTenant: 1,
          batchQueuePerTenant: 2,
        },
        logLevel: 'silent',
      });
      after(() => app.close());
      const a = await headersOf(db, app);
      const b = await headersOf(db, app);
      const done: string[] = [];
      const post = (name: string, headers: Record<string, string>, body: string) =>
        app
          .inject({ method: 'POST', url: '/api/products/batch-create', headers, payload: body })
          .then((r) => {
            done.push(`${name} ${r.statusCode}`);
            return r;
          });

      const flood = Array.from({ length: 6 }, (_, n) => post(`a${n}`, a, productBatch(`A${n}-`)));
      // B arrives while A's batches run and wait: seen in the admission's own counts (or, failing that,
      // once A's flood was all answered, which the order asserted below then shows).
      const aHeld = async () =>
        (await metricValue(app, 'sfa_batch_running')) >= 1 &&
        (await metricValue(app, 'sfa_batch_waiting')) >= 1;
      while (done.length < flood.length && !(await aHeld())) await new Promise((turn) => setImmediate(turn));
      const bBatch = post('b', b, productBatch('B-'));
      const bRead = app.inject({ method: 'GET', url: '/v1/customers?limit=10', headers: b });
      const answers = await Promise.all(flood);
      const [bAnswer, bReadAnswer] = await Promise.all([bBatch, bRead]);

      for (const answer of answers) {
        assert.ok([201, 429, 503].includes(answer.statusCode), `A got ${answer.statusCode}: ${answer.body}`);
        if (answer.statusCode !== 201) {
          assert.ok(Number(answer.headers['retry-after']) >= 1, 'a refusal says when to retry');
          assert.match(answer.json().errors[0].message, /retry in \d+ seconds/);
        }
      }
      const created = answers.filter((r) => r.statusCode === 201).length;
      assert.ok(created >= 1, 'A is not starved');
      assert.ok(created < 6, `with one place and two waiting, some of A's six are refused (${done})`);
      assert.equal(bAnswer.statusCode, 201, bAnswer.body);
      assert.equal(bReadAnswer.statusCode, 200);
      const lastA = Math.max(...done.map((entry, at) => (/^a\d 201$/.test(entry) ? at : -1)));
      assert.ok(done.indexOf('b 201') < lastA, `B's batch was not kept behind all of A's: ${done}`);

      // Every place was given back: A's next batch runs at once.
      const again = await post('a again', a, productBatch('A-again-'));
      assert.equal(again.statusCode, 201, again.body);
    });

    test('past the byte budget a body is refused with 503 and Retry-After; the bytes come back', async () => {
      const db = await backend.db();
      const app = await buildApp({
        db,
        config: { ...testAuthConfig, batchBodiesMaxBytes: 100_000 },
        logLevel: 'silent',
      });
      after(() => app.close());
      const a = await headersOf(db, app);
      const b = await headersOf(db, app);
      const big = (prefix: string) => Buffer.from(productBatch(prefix)); // about 350 kB
      // A's body is half received and held.
      const slow = new PassThrough();
      const aBody = big('A-');
      slow.write(aBody.subarray(0, 80_000));
      const aAnswer = app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: { ...a, 'content-length': String(aBody.length) },
        payload: slow,
      });
      // Held means counted: wait (by turns of the event loop, not by the clock) until the admission
      // holds A's first 80 kB, as GET /metrics shows it.
      while ((await metricValue(app, 'sfa_batch_body_bytes_held')) < 80_000)
        await new Promise((turn) => setImmediate(turn));
      const refused = await app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: b,
        payload: big('B-'),
      });
      assert.equal(refused.statusCode, 503, refused.body);
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.match(refused.json().errors[0].message, /too many batch bodies/);
      slow.end(aBody.subarray(80_000));
      assert.equal((await aAnswer).statusCode, 201);
      // Both bodies' bytes were given back: B's batch is taken now.
      const again = await app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: b,
        payload: big('B-'),
      });
      assert.equal(again.statusCode, 201, again.body);
    });

    test("a body still arriving holds no place: another tenant's batch is written meanwhile", async () => {
      const db = await backend.db();
      const app = await buildApp({
        db,
        config: { ...testAuthConfig, batchConcurrency: 1, batchConcurrencyPerTenant: 1 },
        logLevel: 'silent',
      });
      after(() => app.close());
      const a = await headersOf(db, app);
      const b = await headersOf(db, app);
      const slow = new PassThrough();
      const body = Buffer.from(JSON.stringify([{ code: 'SLOW', description: 'p' }]));
      slow.write(body.subarray(0, 10));
      const slowAnswer = app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: { ...a, 'content-length': String(body.length) },
        payload: slow,
      });
      const other = await app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: b,
        payload: productBatch('B-'),
      });
      assert.equal(other.statusCode, 201, other.body);
      slow.end(body.subarray(10));
      assert.equal((await slowAnswer).statusCode, 201);
    });
  });
}
