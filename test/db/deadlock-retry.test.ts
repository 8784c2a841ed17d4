import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { type ScratchDatabase, scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { loadConfig } from '../../src/config.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';

/*
 * A batch that PostgreSQL aborts as a deadlock victim (40P01) is run again whole, and the client sees
 * only its 201: withRetry (src/db/database.ts) around a plain batch's one statement
 * (src/batch/write-block.ts) and around a keyed request's transaction (src/db/postgres.ts). No other
 * test forces a deadlock, so without this one the retry could go unnoticed. A transaction of the
 * test's own holds price B; the service's prices upsert, which locks existing rows in key order,
 * takes A and waits for B; the test then asks for A. The test's session checks for deadlocks after
 * 10 s, the service's after the default 1 s, so PostgreSQL ends the service's transaction, the
 * test's is granted A, commits, and the retry then writes every row. The rows are read from the table:
 * the change feed would wait for any open transaction on a shared server.
 */

const serverUrl = process.env.TEST_DATABASE_URL;
const quiet = { PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '100000' };
const PRICES = '/api/prices/batch-create';
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('a deadlock the service loses is retried', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL',
}, () => {
  let tenant: TenantClient;
  let scratch: ScratchDatabase;
  let server: RunningServer;
  let observer: pg.Client;
  before(async () => {
    scratch = await scratchPostgresDatabase(serverUrl!);
    server = await startServer(loadConfig({ ...quiet, DATABASE_URL: scratch.url }));
    tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'deadlock'));
    observer = new pg.Client({ connectionString: scratch.url });
    await observer.connect();
  });
  after(async () => {
    await observer?.end();
    await server?.close();
    await scratch?.drop();
  });
  const deadlocks = async () =>
    (
      await observer.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = $1', [
        scratch.name,
      ])
    ).rows[0]!.n;

  for (const [kind, extra] of [
    ['a plain batch (its one statement)', {}],
    ['a keyed batch (its transaction)', { 'idempotency-key': randomUUID() }],
  ] as const) {
    test(kind, async () => {
      // A before B in the write's key order (byte-wise).
      const run = randomUUID().slice(0, 8);
      const [a, b] = [`${run}-A`, `${run}-B`];
      const products = [a, b].map((code) => ({ code, description: 'deadlock' }));
      assert.equal((await tenant.post('/api/products/batch-create', products)).status, 201);
      const prices = (price: string) =>
        [a, b].map((code) => ({ product_code: code, price_list: 'L', price }));
      assert.equal((await tenant.post(PRICES, prices('1.00'))).status, 201);
      const counted = await deadlocks();

      const holder = new pg.Client({ connectionString: scratch.url });
      await holder.connect();
      after(() => holder.end());
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query("SET deadlock_timeout = '10s'");
      await holder.query('BEGIN');
      const lock = (code: string) =>
        holder.query("SELECT 1 FROM prices WHERE product_code = $1 AND price_list = 'L' FOR UPDATE", [code]);
      await lock(b);

      let answered = false;
      const pending = tenant.post(PRICES, prices('2.00'), extra).finally(() => {
        answered = true;
      });
      // The service has updated A and waits for B, which the test's transaction holds.
      const blocked =
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))';
      while ((await observer.query<{ n: number }>(blocked, [pid])).rows[0]!.n === 0) {
        if (answered)
          assert.fail(`the batch answered without waiting for B: ${JSON.stringify(await pending)}`);
        await pause(10);
      }
      // Closes the cycle. Granted only once the service's transaction is gone: it was the victim.
      await lock(a);
      await holder.query('COMMIT');

      const answer = await pending;
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.equal(answer.body.updated, 2, JSON.stringify(answer.body));
      const stored = await observer.query<{ product_code: string; price: string }>(
        'SELECT product_code, price::text AS price FROM prices WHERE product_code = ANY ($1) ORDER BY 1',
        [[a, b]],
      );
      assert.deepEqual(stored.rows, [
        { product_code: a, price: '2.00' },
        { product_code: b, price: '2.00' },
      ]);
      // PostgreSQL counted the deadlock (its statistics reach the view within seconds): the 201 came
      // through the retry. At least one: the previous test's can reach the view only now.
      while ((await deadlocks()) === counted) await pause(50);
      assert.ok(BigInt(await deadlocks()) >= BigInt(counted) + 1n);
    });
  }
});
