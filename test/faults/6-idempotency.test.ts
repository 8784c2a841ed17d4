import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { delivery, item } from '../helpers/read-data.js';
import { faultSuite } from './fault-suite.js';
import { sleep, waitForStatement, waitIdle } from './faults-server.js';

/*
 * extensions.md 8: the kept answer of an Idempotency-Key is written in the batch's own transaction.
 * A batch whose connection is killed (pg_terminate_backend) or whose process is killed (SIGKILL)
 * while its write statement runs leaves neither its rows nor a kept answer (or, when it committed
 * first, both); the retry with the same key then writes once, and a further retry is the replay.
 */

const N = 10_000;
const PATH = '/api/deliveries/batch-create';

const body = JSON.stringify(Array.from({ length: N }, (_, i) => delivery(`D${i}`, { items: [item(1)] })));

/** 'none' (no rows, no kept answer), 'both' (all rows and the kept answer), else what is broken. */
async function state(db: Database, tenantId: number, key: string): Promise<string> {
  const [row] = await db.query<{ d: number; i: number; k: number }>(
    `SELECT (SELECT count(*)::int FROM deliveries WHERE tenant_id = $1) AS d,
            (SELECT count(*)::int FROM delivery_items WHERE tenant_id = $1) AS i,
            (SELECT count(*)::int FROM idempotency_keys WHERE tenant_id = $1 AND key = $2) AS k`,
    [tenantId, key],
  );
  if (row!.d === 0 && row!.i === 0 && row!.k === 0) return 'none';
  if (row!.d === N && row!.i === N && row!.k === 1) return 'both';
  return `broken: ${JSON.stringify(row)}`;
}

function post(tenant: TenantClient, key: string) {
  return tenant.post(PATH, body, { 'idempotency-key': key });
}

/** The retries after a kill: the first writes once (or replays what committed), the next replays. */
async function retries(db: Database, tenant: TenantClient<NewTenant>, key: string, was: string) {
  const again = await post(tenant, key);
  assert.equal(again.status, 201, again.text);
  if (was === 'none') assert.equal(again.body.created, N, 'nothing was written before: all created now');
  assert.equal(await state(db, tenant.tenant.tenantId, key), 'both');
  const replay = await post(tenant, key);
  assert.equal(replay.status, 201);
  assert.equal(replay.text, again.text);
}

describe('Idempotency-Key under killed connections and killed processes', () => {
  const suite = faultSuite();

  test('pg_terminate_backend while the keyed batch writes: neither rows nor answer; the retry writes once', async () => {
    const { database, admin } = suite;
    const server = await suite.startServer();
    let killedMidStatement = 0;
    for (let round = 0; round < 3; round++) {
      const tenant = await suite.newTenant(server);
      const key = randomUUID();
      const sent = post(tenant, key);
      const pid = await waitForStatement(admin, database.name, 'WITH written', 20_000);
      assert.ok(pid, 'the write statement was seen running');
      await sleep(Math.random() * 40);
      const { rows } = await admin.query<{ killed: boolean }>('SELECT pg_terminate_backend($1) AS killed', [
        pid,
      ]);
      const answer = await sent;
      await waitIdle(admin, database.name, 20_000);
      const was = await state(database.db, tenant.tenant.tenantId, key);
      assert.ok(was === 'none' || was === 'both', was);
      if (answer.status === 201) assert.equal(was, 'both');
      else {
        assert.equal(answer.status, 500, answer.text);
        assert.equal(was, 'none', '5xx: nothing written, nothing kept');
        if (rows[0]!.killed) killedMidStatement++;
      }
      await retries(database.db, tenant, key, was);
    }
    assert.ok(killedMidStatement >= 1, 'at least one statement was killed mid-way');
  });

  test('SIGKILL of the server while the keyed batch writes: neither rows nor answer; a new process writes once, then replays', async () => {
    const { database, admin } = suite;
    for (let round = 0; round < 2; round++) {
      const server = await suite.startServer();
      const tenant = await suite.newTenant(server);
      const key = randomUUID();
      const sent = post(tenant, key);
      const pid = await waitForStatement(admin, database.name, 'WITH written', 20_000);
      assert.ok(pid, 'the write statement was seen running');
      await sleep(Math.random() * 40);
      server.child.kill('SIGKILL');
      const answer = await sent;
      await server.exited;
      await waitIdle(admin, database.name, 30_000);
      const was = await state(database.db, tenant.tenant.tenantId, key);
      assert.ok(was === 'none' || was === 'both', was);
      if (answer.status === 201) assert.equal(was, 'both');
      // The key is not stuck "in progress": its lock ended with the connection.
      const next = await suite.startServer();
      await retries(database.db, tenant.over(httpTransport(next.url)), key, was);
      await next.kill();
    }
  });
});
