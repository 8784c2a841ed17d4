import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { tenantClient } from '../../kit/tenant-client.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { metricValue } from '../helpers/metrics.js';
import { type PrivateCluster, startPrivateCluster } from '../helpers/private-cluster.js';

/*
 * Light places in the app (src/admission/batch-admission.ts): with BATCH_CONCURRENCY=1 and a pool of six
 * connections, a lone tenant's light batches (under 256 KiB) run four at once (every connection but
 * two), and its heavy ones one at a time. Seen from PostgreSQL: the tenant's rows are locked by
 * another session, so each admitted batch's statement waits on its row, and pg_stat_activity counts
 * the app's statements waiting at once. On a cluster of the test's own: the row locks take an xid,
 * which would hold back the change feed of every other suite on a shared server while they last.
 */

const POOL = 6;
const LIGHT_PLACES = POOL - 2;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('light places in the app on postgres', {
  skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL installed)',
}, () => {
  let cluster: PrivateCluster | undefined;
  after(() => cluster?.remove());

  async function setup() {
    cluster ??= await startPrivateCluster();
    const url = cluster.url;
    const applicationName = `sfa-light-${randomUUID().slice(0, 8)}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    let locking = false;
    const release = async () => {
      if (!locking) return;
      locking = false;
      await admin.query('COMMIT');
    };
    const db = openPostgres({ connectionString: url, poolSize: POOL, applicationName });
    let app: FastifyInstance | undefined;
    // In this order, also after a failed assertion: the rows unlocked first, so that the batches
    // waiting on them end and the app and its pool can close.
    after(async () => {
      await release();
      await app?.close();
      await db.close();
      await admin.end();
    });
    await migrate(db);
    app = await buildApp({
      db,
      config: {
        ...testAuthConfig,
        batchConcurrency: 1,
        batchConcurrencyPerTenant: 1,
        batchQueuePerTenant: 16,
      },
      logLevel: 'silent',
    });
    const tenant = await createTenant(db, `light-${randomUUID()}`);
    const headers = {
      'content-type': 'application/json',
      ...(await tenantClient(injectTransport(app), tenant)).headers,
    };
    const served = app;
    const post = (body: unknown) =>
      served.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers,
        payload: JSON.stringify(body),
      });
    /** The app's statements waiting on a lock now (the admin session's stats snapshot taken anew). */
    const waiting = async () => {
      await admin.query('SELECT pg_stat_clear_snapshot()');
      return Number(
        (
          await admin.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
            [applicationName],
          )
        ).rows[0]!.n,
      );
    };
    /** Locks the tenant's products of these codes in a transaction of the admin session. */
    const lock = async (codes: string[]) => {
      await admin.query('BEGIN');
      locking = true;
      const locked = await admin.query(
        'SELECT 1 FROM products WHERE tenant_id = $1 AND code = ANY($2) FOR UPDATE',
        [tenant.tenantId, codes],
      );
      assert.equal(locked.rowCount, codes.length);
    };
    /**
     * Waits until every one of `sent` batches is admitted or waiting for a place (the admission's own
     * counts), then until each admitted one's statement waits on its row: nothing else can start
     * then, so no fixed wait is needed to see that no other joins. Answers how many run at once.
     */
    const settleAt = async (sent: number) => {
      const admitted = () => metricValue(served, 'sfa_batch_running');
      const queued = () => metricValue(served, 'sfa_batch_waiting');
      for (let tries = 0; (await admitted()) + (await queued()) < sent; tries++) {
        assert.ok(
          tries < 400,
          `${sent} batches at the admission (now ${await admitted()} + ${await queued()})`,
        );
        await sleep(25);
      }
      const running = await admitted();
      for (let tries = 0; (await waiting()) < running; tries++) {
        assert.ok(tries < 400, `${running} statements waiting (now ${await waiting()})`);
        await sleep(25);
      }
      assert.equal(await waiting(), running, 'every admitted batch, and only those, waits on its row');
      return running;
    };
    return { post, lock, settleAt, release };
  }

  const codes = Array.from({ length: 6 }, (_, n) => `L${n}`);

  test('light batches of a lone tenant run four at once: every connection but two', async () => {
    const { post, lock, settleAt, release } = await setup();
    assert.equal((await post(codes.map((code) => ({ code, description: 'first' })))).statusCode, 201);
    await lock(codes);
    const answers = codes.map((code) => post([{ code, description: 'changed' }]));
    assert.equal(await settleAt(codes.length), LIGHT_PLACES);
    await release();
    for (const answer of await Promise.all(answers)) assert.equal(answer.statusCode, 201, answer.body);
  });

  test('heavy batches of a lone tenant run one at a time (BATCH_CONCURRENCY=1)', async () => {
    const { post, lock, settleAt, release } = await setup();
    assert.equal((await post(codes.map((code) => ({ code, description: 'first' })))).statusCode, 201);
    await lock(codes);
    // Past the light bound (256 KiB): each body is its locked product and 3,000 new ones.
    const heavy = (code: string) => [
      { code, description: 'changed' },
      ...Array.from({ length: 3_000 }, (_, at) => ({ code: `${code}-${at}`, description: 'p'.repeat(80) })),
    ];
    assert.ok(JSON.stringify(heavy('L0')).length > 256 * 1024);
    const answers = codes.slice(0, 3).map((code) => post(heavy(code)));
    assert.equal(await settleAt(3), 1);
    await release();
    for (const answer of await Promise.all(answers)) assert.equal(answer.statusCode, 201, answer.body);
  });
});
