import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { spawnServer, waitReady } from '../../kit/server-process.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { newDatabaseSettings } from '../helpers/served-settings.js';

/*
 * What holds the change feed back is visible (issue 21 item 2): the oldest transaction holding an xid
 * anywhere on the database server, the records waiting behind it, a metric of both and one warning in
 * the log naming its pid, database and state, never its query text. Only PostgreSQL has other
 * connections that can hold one; on PGlite the figures stay 0.
 */

const HOLDER_QUERY = 'SELECT pg_current_xact_id() AS held_by_this_test';

/** A second connection that opens a transaction and takes an xid, as a forgotten psql session would. */
async function holdXid(url: string): Promise<{ pid: number; database: string; release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  // A scratch database dropped WITH (FORCE) at the end of the file ends this connection first.
  client.on('error', () => {});
  await client.connect();
  await client.query('BEGIN');
  await client.query(HOLDER_QUERY);
  const [row] = (
    await client.query<{ pid: number; db: string }>(
      'SELECT pg_backend_pid() AS pid, current_database() AS db',
    )
  ).rows;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await client.query('COMMIT').catch(() => {});
    await client.end();
  };
  after(release);
  return { pid: row!.pid, database: row!.db, release };
}

/** The gauge's value in the app's metrics text. */
async function gauge(
  app: { metrics: { registry: { metrics(): Promise<string> } } },
  name: string,
): Promise<number> {
  const text = await app.metrics.registry.metrics();
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(match, `${name} in the metrics`);
  return Number(match[1]);
}

async function appWithLog(db: Database, warnAfterSeconds: number) {
  const lines: Record<string, unknown>[] = [];
  const app = await buildApp({
    db,
    config: { ...testAuthConfig, feedStallWarnSeconds: warnAfterSeconds },
    logLevel: 'warn',
    logStream: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  after(() => app.close());
  const tenant = await tenantClient(
    injectTransport(app),
    await createTenant(db, `stall-${Date.now()}-${Math.random()}`),
  );
  return { app, tenant, lines };
}

for (const backend of backends()) {
  describe(`what holds the change feed back (${backend.name})`, () => {
    if (backend.name === 'pglite') {
      test('one connection: nothing else can hold an xid, the figures are 0 and nothing is logged', async () => {
        const { app, tenant, lines } = await appWithLog(await backend.db(), 1);
        assert.equal(
          (await tenant.post('/api/products/batch-create', [{ code: 'S-1', description: 'x' }])).status,
          201,
        );
        const stall = await app.feedWatch.check();
        assert.deepEqual(stall, { holder: undefined, heldBack: 0, heldBackSeconds: 0 });
        assert.equal(await gauge(app, 'sfa_feed_held_back_changes'), 0);
        assert.equal(await gauge(app, 'sfa_feed_oldest_xid_age_seconds'), 0);
        assert.equal(lines.length, 0);
      });
      return;
    }

    test('an open transaction with an xid: named in the metric and once in the log; its changes wait', async () => {
      const db = await backend.db();
      const { app, tenant, lines } = await appWithLog(db, 0);
      const holder = await holdXid(process.env.TEST_DATABASE_URL!);
      const code = `HELD-${Date.now()}`;
      assert.equal(
        (await tenant.post('/api/products/batch-create', [{ code, description: 'x' }])).status,
        201,
      );
      // Other suites share this server: their short transactions may be older than ours for a moment.
      let stall = await app.feedWatch.check();
      for (const until = Date.now() + 15_000; stall.holder?.pid !== holder.pid && Date.now() < until; ) {
        await new Promise((done) => setTimeout(done, 50));
        stall = await app.feedWatch.check();
      }
      assert.equal(stall.holder?.pid, holder.pid);
      assert.equal(stall.holder?.database, holder.database);
      assert.equal(stall.holder?.state, 'idle in transaction');
      assert.ok(stall.heldBack >= 1, 'the product written after the holder began waits');
      assert.ok(stall.heldBackSeconds > 0);
      assert.ok((await gauge(app, 'sfa_feed_held_back_changes')) >= 1);
      assert.ok((await gauge(app, 'sfa_feed_oldest_xid_age_seconds')) > 0);
      assert.ok((await gauge(app, 'sfa_feed_held_back_seconds')) > 0);
      // The product is not in the feed while the holder is open.
      const page = await tenant.get('/v1/changes?resource=products&limit=1000');
      assert.equal(page.status, 200);
      assert.ok(!page.body.data.some((row: { code: string }) => row.code === code));

      // Other suites' transactions on the shared server may have been warned of before ours: only
      // the warnings naming this holder count.
      const ours = (line: Record<string, unknown>) =>
        (line.feedHolder as { pid?: number } | undefined)?.pid === holder.pid;
      const warnings = lines.filter(ours);
      assert.equal(warnings.length, 1);
      const warning = warnings[0]!;
      assert.equal(warning.level, 40);
      assert.deepEqual(
        {
          pid: (warning.feedHolder as { pid: number }).pid,
          database: (warning.feedHolder as { database: string }).database,
        },
        { pid: holder.pid, database: holder.database },
      );
      assert.match(
        String(warning.msg),
        new RegExp(`pid ${holder.pid}, database ${holder.database}, state idle in transaction`),
      );
      assert.ok(!JSON.stringify(lines).includes('held_by_this_test'), 'never the query text');
      await app.feedWatch.check();
      assert.equal(lines.filter(ours).length, 1, 'one warning per holder');

      await holder.release();
      for (const until = Date.now() + 15_000; Date.now() < until; ) {
        const page = await tenant.get('/v1/changes?resource=products&limit=1000');
        if (page.body.data.some((row: { code: string }) => row.code === code)) return;
        await new Promise((done) => setTimeout(done, 50));
      }
      assert.fail('the product reached the feed once the holder ended');
    });
  });
}

// PostgreSQL only: on PGlite nothing but the server itself can hold an xid.
if (process.env.TEST_DATABASE_URL)
  describe('a served process watches on its own', () => {
    test('a transaction held past FEED_STALL_WARN_SECONDS is warned of within seconds, without its query', async () => {
      const settings = await newDatabaseSettings('postgres');
      let output = '';
      const server = await spawnServer({
        env: { ...process.env, ...settings, FEED_STALL_WARN_SECONDS: '1', LOG_LEVEL: 'warn' },
        onOutput: (chunk) => {
          output += chunk.toString();
        },
      });
      after(() => server.kill());
      await waitReady(server, 60_000, () => output);
      const holder = await holdXid(settings.DATABASE_URL!);
      const until = Date.now() + 20_000;
      while (!output.includes(`"pid":${holder.pid}`)) {
        assert.ok(Date.now() < until, `no warning naming pid ${holder.pid}: ${output.slice(-2000)}`);
        await new Promise((done) => setTimeout(done, 100));
      }
      assert.match(output, /the change feed is held back/);
      assert.ok(!output.includes('held_by_this_test'), 'never the query text');
    });
  });
