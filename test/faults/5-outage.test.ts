import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FORM, tokenForm } from '../../kit/token.js';
import type { Answer } from '../../kit/transport.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../src/http/problems.js';
import { customer, delivery } from '../helpers/read-data.js';
import { faultSuite } from './fault-suite.js';
import {
  postgresCluster,
  postgresIsReady,
  requireDatabaseUrl,
  sleep,
  waitForStatement,
} from './faults-server.js';

/*
 * Issue 5 item 2: PostgreSQL stopped under a running server. Requests answer at once (< 6 s), with
 * Retry-After: the batch endpoints the spec's 500 body, the others 503; /ready says 503, /health
 * still 200, the process does not crash (pool errors are handled); a 10,000-item batch cut off by the stop is all or nothing; once PostgreSQL is back the
 * service serves again by itself within seconds. PostgreSQL is ALWAYS started again, also when the
 * test fails. This stops the machine's PostgreSQL for a few seconds: it runs last in test:faults.
 */

const serverUrl = requireDatabaseUrl();
const N = 10_000;
const ANSWER_WITHIN_MS = 6_000;
const CONNECTION_ERROR = /^Error connecting to database: database unavailable \(request id [^)]+\)$/;

async function ensurePostgresUp(): Promise<void> {
  if (await postgresIsReady(serverUrl)) return;
  await postgresCluster('start');
  for (let n = 0; n < 120 && !(await postgresIsReady(serverUrl)); n++) await sleep(500);
}

// Whatever happens in this file, PostgreSQL runs again when it ends.
after(ensurePostgresUp);

/**
 * "Come back": the contract's batch endpoints their own 500, every other endpoint 503, both with
 * Retry-After (docs/decisions/0143-come-back-answers.md).
 */
function assertConnectionError(answer: Answer, what: string, status: 500 | 503) {
  assert.equal(answer.status, status, `${what}: ${answer.status} ${answer.text}`);
  assert.equal(answer.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS), what);
  assert.deepEqual(Object.keys(answer.body).sort(), ['errors', 'statusCode'], what);
  assert.equal(answer.body.statusCode, status);
  assert.equal(answer.body.errors.length, 1);
  assert.match(answer.body.errors[0].message, CONNECTION_ERROR, what);
  assert.ok(answer.ms < ANSWER_WITHIN_MS, `${what}: answered in ${answer.ms} ms`);
  slowest = Math.max(slowest, answer.ms);
}
let slowest = 0;

describe('database outage', () => {
  // Registered first, so they run before the suite's own: its setup and its drop need PostgreSQL up.
  before(ensurePostgresUp);
  after(ensurePostgresUp);
  const suite = faultSuite();

  test('PostgreSQL stopped and started again under a running server', async () => {
    const { database, admin } = suite;
    const server = await suite.startServer({ DB_POOL_SIZE: '4' });
    const tenant = await suite.newTenant(server);
    // The same server without the tenant's credentials: /ready, /health, POST /token by hand.
    const { transport } = tenant;
    const upsert = (version: string) =>
      JSON.stringify(Array.from({ length: N }, (_, i) => customer(`C${i}`, { name: `${version} ${i}` })));
    assert.equal((await tenant.post('/api/customers/batch-create', upsert('old'))).status, 201);
    assert.equal(
      (await tenant.post('/api/deliveries/batch-create', [delivery('D1'), delivery('D2')])).status,
      201,
    );
    const figures = { requests: 0, slowestAnswerMs: 0, stoppedForMs: 0, readyAfterStartMs: 0, inFlight: '' };

    let stoppedAt = 0;
    try {
      // A batch in flight when the database goes away: it is written whole or not at all.
      const inFlight = tenant.post('/api/customers/batch-create', upsert('new'));
      assert.ok(await waitForStatement(admin, database.name, 'WITH written', 20_000), 'statement seen');
      await admin.end().catch(() => {});
      stoppedAt = Date.now();
      await postgresCluster('stop');
      const cut = await inFlight;
      figures.inFlight = String(cut.status);
      if (cut.status !== 201) assertConnectionError(cut, 'the batch in flight', 500);

      // During the outage: every kind of request answers at once, none hangs, the process lives.
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all([
          tenant.post('/api/customers/batch-create', [customer('X1')]),
          tenant.post('/api/products/batch-create', [{ code: 'P1', description: 'x' }]),
          tenant.post('/v1/deliveries/acknowledge', ['D1']),
          tenant.get('/v1/customers'),
          tenant.get('/v1/deliveries/pending'),
        ]);
        figures.requests += answers.length;
        for (const [n, answer] of answers.entries())
          assertConnectionError(answer, `round ${round} request ${n}`, n < 2 ? 500 : 503);
        const ready = await transport.send({ path: '/ready', timeoutMs: 10_000 });
        assert.equal(ready.status, 503, ready.text);
        assert.equal(ready.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
        assert.ok(ready.ms < ANSWER_WITHIN_MS, `/ready answered in ${ready.ms} ms`);
        slowest = Math.max(slowest, ready.ms);
        const health = await transport.send({ path: '/health' });
        assert.equal(health.status, 200);
        figures.requests += 2;
        assert.ok(server.alive(), 'the process is still running');
      }
      // A token cannot be issued without the database either: OAuth's 503, not a hang and not a 401.
      const token = await transport.send({
        method: 'POST',
        path: '/token',
        headers: { 'content-type': FORM },
        body: tokenForm(tenant.tenant),
      });
      figures.requests++;
      assert.equal(token.status, 503, token.text);
      assert.equal(token.body.error, 'temporarily_unavailable', token.text);
      assert.equal(token.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
    } finally {
      await postgresCluster('start').catch(() => {});
      figures.stoppedForMs = Date.now() - stoppedAt;
    }

    // Back: the service finds the database again by itself, within seconds.
    const started = Date.now();
    while (!(await postgresIsReady(serverUrl)) && Date.now() - started < 60_000) await sleep(100);
    const upAt = Date.now();
    let ready = await transport.send({ path: '/ready' });
    while (ready.status !== 200 && Date.now() - upAt < 10_000) {
      await sleep(100);
      ready = await transport.send({ path: '/ready' });
    }
    figures.readyAfterStartMs = Date.now() - upAt;
    assert.equal(ready.status, 200, `ready within 10 s of PostgreSQL accepting connections: ${ready.text}`);
    assert.ok(server.alive());

    // The batch cut off by the stop is all or nothing; sending it again completes it.
    const rows = await database.db.query<{ v: string; n: number }>(
      `SELECT split_part(name, ' ', 1) AS v, count(*)::int AS n FROM customers
       WHERE tenant_id = $1 AND code LIKE 'C%' GROUP BY 1`,
      [tenant.tenant.tenantId],
    );
    assert.equal(rows.length, 1, `one version only: ${JSON.stringify(rows)}`);
    assert.equal(rows[0]!.n, N);
    if (figures.inFlight === '201') assert.equal(rows[0]!.v, 'new');
    const again = await tenant.post('/api/customers/batch-create', upsert('new'));
    assert.equal(again.status, 201, again.text);
    assert.equal((await tenant.get('/v1/customers?limit=1')).body.meta.totalItems, N);
    const ack = await tenant.post('/v1/deliveries/acknowledge', ['D1']);
    assert.equal(ack.status, 200);
    assert.equal(ack.body.acknowledged, 1);
    assert.match(
      server.logs(),
      /"msg":"database pool error"|"msg":"database unavailable: answered to come back"/,
    );
    figures.slowestAnswerMs = slowest;
    console.log(`# outage: ${JSON.stringify(figures)}`);
    assert.ok(figures.stoppedForMs < 20_000, `outage window ${figures.stoppedForMs} ms`);
  });
});
