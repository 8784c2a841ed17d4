import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { loadConfig } from '../../src/config.js';
import { RESTORED_AFTER_MESSAGE } from '../../src/feed/params.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { type PrivateCluster, startPrivateCluster } from '../helpers/private-cluster.js';

/*
 * The change feed after the database is brought back to an earlier point in the same cluster
 * (extensions.md 10; src/sql/changes.ts): a copy of PGlite's data directory put back, a cold copy of
 * a PostgreSQL data folder put back under a running instance. The transaction counter goes back with
 * it, so the positions of cursors handed out after the copy are given out again to new writes. Every
 * such cursor must be refused (400 naming after), before new writes reach its position and after they
 * pass it; a cursor from before the copy is served every new record.
 */

const quiet = { PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0' };

/** What the scenario needs of an engine: a served instance, and the copy and restore of its data. */
interface Engine {
  server(): RunningServer;
  /** Takes a cold copy of the data (the instance's or the cluster's stop and start around it). */
  backup(): Promise<void>;
  /** Puts the copy back. */
  restore(): Promise<void>;
}

interface Page {
  data: { code: string }[];
  next: string;
  hasMore: boolean;
}

/** The tenant's calls, over HTTP to whatever instance is serving now (signed in once per instance). */
function client(engine: Engine, tenant: NewTenant) {
  const signedIn = new WeakMap<RunningServer, Promise<TenantClient>>();
  const current = () => {
    const server = engine.server();
    let made = signedIn.get(server);
    if (!made) {
      made = tenantClient(httpTransport(server.url), tenant);
      signedIn.set(server, made);
    }
    return made;
  };
  return {
    async changes(after?: string) {
      const query = `resource=products&limit=1000${after ? `&after=${after}` : ''}`;
      return (await current()).get(`/v1/changes?${query}`);
    },
    async page(after?: string): Promise<Page> {
      const { status, body } = await this.changes(after);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.hasMore, false);
      return body;
    },
    async refused(cursor: string, when: string) {
      const { status, body } = await this.changes(cursor);
      assert.equal(status, 400, `${when}: ${JSON.stringify(body)}`);
      assert.deepEqual(body.errors, [{ field: 'after', message: RESTORED_AFTER_MESSAGE }], when);
    },
    async upload(codes: string[]) {
      const response = await (await current()).post(
        '/api/products/batch-create',
        codes.map((code) => ({ code, description: code })),
      );
      assert.equal(response.status, 201, JSON.stringify(response.body));
    },
  };
}

/** The cluster's transaction counter: the next xid it gives out. */
async function counter(server: RunningServer): Promise<bigint> {
  const [row] = await server.db.query<{ x: string }>(
    'SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x',
  );
  return BigInt(row!.x);
}

function positionOf(cursor: string): bigint {
  return BigInt(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')).x);
}

async function scenario(engine: Engine) {
  const tenant = await createTenant(engine.server().db, 'restored');
  const erp = client(engine, tenant);
  await erp.upload(['A1', 'A2']);
  // Handed out before the copy: of the history the restored database has.
  const early = (await erp.page()).next;

  await engine.backup();
  // Thirty transactions after the copy, and a cursor past them: a history the restore takes away.
  for (let n = 0; n < 30; n++) await erp.upload([`LOST${n}`]);
  const late = await erp.page(early);
  assert.equal(late.data.length, 30);

  await engine.restore();
  const lateAt = positionOf(late.next);
  assert.ok((await counter(engine.server())) < lateAt, 'the restore took the counter back');

  // Before any new write: the late cursor is ahead of the counter, the early one reads on.
  await erp.refused(late.next, 'before new writes');
  assert.deepEqual((await erp.page(early)).data, []);

  // New writes get positions behind the late cursor: it stays refused, the early one sees them.
  await erp.upload(['N1']);
  await erp.upload(['N2', 'N3']);
  await erp.refused(late.next, 'new writes behind it');
  const codes = (page: Page) => page.data.map((p) => p.code);
  assert.deepEqual(codes(await erp.page(early)), ['N1', 'N2', 'N3']);

  // The counter passes the late cursor (other work of the cluster), then a write lands after it: the
  // late cursor looks valid by its position alone, and a page from it would show N4 without N1 to N3.
  while ((await counter(engine.server())) <= lateAt)
    await engine.server().db.query('SELECT pg_current_xact_id()');
  await erp.upload(['N4']);
  assert.ok(positionOf((await erp.page(early)).next) > lateAt, 'N4 is placed after the late cursor');
  await erp.refused(late.next, 'after new writes passed it');
  assert.deepEqual(codes(await erp.page(early)), ['N1', 'N2', 'N3', 'N4']);

  // Downloading again, as the refusal says, gives the database's whole history, and its cursor reads.
  const again = await erp.page();
  assert.deepEqual(codes(again), ['A1', 'A2', 'N1', 'N2', 'N3', 'N4']);
  await erp.upload(['N5']);
  assert.deepEqual(codes(await erp.page(again.next)), ['N5']);
}

describe('the change feed after a restore to an earlier point', () => {
  test('PGlite: the data directory copied while stopped and put back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sfa-restore-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    const env = { ...quiet, DATA_DIR: dataDir };
    let server = await startServer(loadConfig(env));
    after(() => server.close());
    const restart = async (between: () => void) => {
      await server.close();
      between();
      server = await startServer(loadConfig(env));
    };
    await scenario({
      server: () => server,
      // The README's backup: stop, copy the directory, start.
      backup: () => restart(() => cpSync(dataDir, join(dir, 'backup'), { recursive: true })),
      restore: () =>
        restart(() => {
          rmSync(dataDir, { recursive: true });
          cpSync(join(dir, 'backup'), dataDir, { recursive: true });
        }),
    });
  });

  test('PostgreSQL: a cold copy of the data folder put back under a running instance', {
    skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (PostgreSQL installed)',
  }, async () => {
    const cluster: PrivateCluster = await startPrivateCluster();
    after(() => cluster.remove());
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: cluster.url, DB_POOL_SIZE: '2' }));
    after(() => server.close());
    // The instance keeps running while the cluster stops: its first requests after may fail (ended
    // sessions); it is in service again once /ready answers 200.
    const ready = () => httpTransport(server.url).send({ path: '/ready' });
    const cold = async (between: () => void) => {
      cluster.stop();
      between();
      cluster.start();
      for (let tries = 0; (await ready()).status !== 200; tries++) {
        assert.ok(tries < 50, 'ready again after the cluster restarted');
      }
    };
    await scenario({
      server: () => server,
      backup: () => cold(() => cluster.copyData('backup')),
      restore: () => cold(() => cluster.restoreData('backup')),
    });
  });
});
