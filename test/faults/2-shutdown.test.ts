import assert from 'node:assert/strict';
import { Agent, get } from 'node:http';
import type { Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { customer } from '../helpers/read-data.js';
import { faultSuite } from './fault-suite.js';
import { sleep, waitForStatement, waitIdle, within } from './faults-server.js';

/*
 * Issue 5 item 4: on SIGTERM the service stops accepting, finishes the requests in flight, closes the
 * pool and exits 0. A 10,000-item upsert in flight when the signal comes completes (201, all rows new)
 * or, if it had not started, is refused: never half-written.
 */

const N = 10_000;

const batch = (version: string) =>
  JSON.stringify(Array.from({ length: N }, (_, i) => customer(`C${i}`, { name: `${version} ${i}` })));

async function versions(db: Database, tenantId: number): Promise<string> {
  const rows = await db.query<{ v: string; n: number }>(
    `SELECT split_part(name, ' ', 1) AS v, count(*)::int AS n FROM customers WHERE tenant_id = $1 GROUP BY 1`,
    [tenantId],
  );
  if (rows.length === 1 && rows[0]!.n === N) return rows[0]!.v;
  return `broken: ${JSON.stringify(rows)}`;
}

const outcomes: Record<string, number> = {};
after(() => console.log(`# shutdown: ${JSON.stringify(outcomes)}`));

describe('graceful shutdown', () => {
  const suite = faultSuite();

  test('SIGTERM with a 10,000-item batch in flight: it completes or is refused whole; exit code 0', async () => {
    const { database, admin } = suite;
    for (let round = 0; round < 6; round++) {
      const server = await suite.startServer();
      const tenant = await suite.newTenant(server);
      assert.equal((await tenant.post('/api/customers/batch-create', batch('old'))).status, 201);
      const sent = tenant.post('/api/customers/batch-create', batch('new'));
      if (round % 2 === 0) {
        assert.ok(await waitForStatement(admin, database.name, 'WITH written', 20_000), 'statement seen');
        await sleep(Math.random() * 100);
      } else {
        await sleep(Math.random() * 150);
      }
      server.child.kill('SIGTERM');
      // Once the signal is handled (logged), no new request is served: refused connection or 503.
      const handled = Date.now();
      while (!server.logs().includes('"msg":"shutting down"') && Date.now() - handled < 10_000)
        await sleep(5);
      const late = await tenant.send({ path: '/v1/customers', timeoutMs: 10_000 });
      const answer = await sent;
      // A hang guard, not a speed: a connection left open after its answer would hold the process
      // until the server's keep-alive timeout (72 s) ends it, so a bound below that is what shows it.
      const exit = await within(server.exited, 60_000);
      assert.ok(exit, `still running 60 s after SIGTERM:\n${server.logs().slice(-2000)}`);
      assert.deepEqual(exit, { code: 0, signal: null }, server.logs().slice(-2000));
      await waitIdle(admin, database.name, 10_000);
      const state = await versions(database.db, tenant.tenant.tenantId);
      const key = `${answer.status} ${state} (new request: ${late.status})`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;

      assert.ok([0, 503].includes(late.status), `a request after SIGTERM is not served: ${late.status}`);
      if (late.status === 503) {
        assert.deepEqual(late.body, {
          statusCode: 503,
          errors: [{ message: 'The service is shutting down; retry the request' }],
        });
      }
      assert.ok(!state.startsWith('broken'), state);
      if (answer.status === 201) assert.equal(state, 'new', 'acknowledged, so all of it');
      else {
        assert.ok([0, 503].includes(answer.status), `${answer.status} ${answer.text}`);
        assert.equal(state, 'old', 'not acknowledged and not written');
      }
      if (round % 2 === 0) assert.equal(answer.status, 201, 'a batch already writing is finished');
      // What the process said: the signal taken once, and the close finished without failing.
      assert.equal(server.logs().match(/"msg":"shutting down"/g)?.length, 1, server.logs().slice(-2000));
      assert.doesNotMatch(server.logs(), /"msg":"shutdown failed"/);
    }
  });

  // Not waiting on idle connections is what the server does to them (it ends them), not how fast it
  // exits. The timeout is a hang guard below the server's keep-alive timeout (72 s), the wait an idle
  // connection held open would otherwise cost before the process exits anyway.
  test('SIGTERM with idle keep-alive connections and no request: the server ends them and exits 0', {
    timeout: 60_000,
  }, async () => {
    const server = await suite.startServer();
    const tenant = await suite.newTenant(server);
    for (let n = 0; n < 5; n++) assert.equal((await tenant.get('/v1/customers')).status, 200);
    // A keep-alive connection the test holds idle itself, to see who ends it: this client never does.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    after(() => agent.destroy());
    const idle = await new Promise<Socket>((resolve, reject) => {
      const request = get(`${server.url}/health`, { agent }, (response) => {
        assert.equal(response.statusCode, 200);
        response.resume();
        response.on('end', () => resolve(request.socket!));
      });
      request.on('error', reject);
    });
    const ended = new Promise<void>((done) => idle.once('close', () => done()));
    server.child.kill('SIGTERM');
    await ended;
    assert.deepEqual(await server.exited, { code: 0, signal: null });
    // Its last words are the signal taken: no request after it, no failed close.
    const lines = server.logs().trim().split('\n');
    assert.match(lines.at(-1)!, /"msg":"shutting down"/, lines.slice(-5).join('\n'));
  });
});
