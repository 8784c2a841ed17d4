import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/open.js';
import { STALE_AFTER_MESSAGE } from '../../src/feed/params.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { newDatabaseSettings, servedBackends } from '../helpers/served-settings.js';

/*
 * The change feed after a restore into another cluster (src/sql/feed-positions.ts): the restored rows
 * keep positions (transaction ids) that the new cluster's counter has not reached, so the feed would
 * hide them and hand out positions below the cursors clients hold. The start (`serve`, as `npm start`
 * runs it) and `sfa-backoffice migrate` renumber the feed then, and refuse cursors from before.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What a restore from another cluster leaves: the feed numbered elsewhere (a made-up cluster id). */
const NUMBERED_ELSEWHERE = "UPDATE settings SET value = '1' WHERE name = 'feed_cluster'";
/** And, when the new cluster's counter is behind the old one's, positions a million transactions ahead. */
const AHEAD =
  'UPDATE products SET change_xid = ((pg_current_xact_id()::text)::numeric + 1000000)::text::xid8';

interface Page {
  data: { code: string }[];
  next: string;
  hasMore: boolean;
}

/** A served instance and the tenant's calls to it. */
async function serve(env: Record<string, string>, tenant?: NewTenant) {
  const server: RunningServer = await startServer(
    loadConfig({ PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0', ...env }),
  );
  const owner = tenant ?? (await createTenant(server.db, 'renumbered'));
  const client = await tenantClient(httpTransport(server.url), owner);
  const changes = (after?: string) =>
    client.get(`/v1/changes?resource=products&limit=1000${after ? `&after=${after}` : ''}`);
  return {
    server,
    tenant: owner,
    changes,
    /**
     * A page once the feed serves every write committed so far: on a PostgreSQL that other suites
     * share, a transaction of theirs holds the feed's horizon back for a moment (test/helpers/feed.ts).
     */
    async page(after?: string): Promise<Page> {
      await feedCaughtUp(server.db);
      const { status, body } = await changes(after);
      assert.equal(status, 200, JSON.stringify(body));
      return body;
    },
    async upload(codes: string[]) {
      const response = await client.post(
        '/api/products/batch-create',
        codes.map((code) => ({ code, description: code })),
      );
      assert.equal(response.status, 201, response.text);
    },
  };
}

/** Opens the database as the process would, with no server on it, and leaves what a restore would. */
async function restore(env: Record<string, string>, statements: string[]): Promise<void> {
  const db = await openDatabase(loadConfig(env));
  try {
    for (const sql of statements) await db.query(sql);
  } finally {
    await db.close();
  }
}

async function cliMigrate(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'migrate'], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.resume();
  assert.equal(await new Promise((done) => child.on('close', done)), 0, stdout);
  return stdout;
}

const cursorFields = (cursor: string) =>
  Object.keys(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))).sort();

for (const backend of servedBackends) {
  describe(`the change feed after a restore into another cluster, on ${backend}`, () => {
    test('a start in another cluster renumbers it: every record served again, cursors from before refused; migrate too', async () => {
      const env = await newDatabaseSettings(backend);

      const first = await serve(env);
      const tenant = first.tenant;
      let before: string;
      try {
        await first.upload(['P1', 'P2']);
        const page = await first.page();
        assert.deepEqual(
          page.data.map((p) => p.code),
          ['P1', 'P2'],
        );
        before = page.next;
        // A feed never renumbered keeps the cursor's first form (no generation).
        assert.deepEqual(cursorFields(before), ['k', 'r', 't', 'x']);
      } finally {
        await first.server.close();
      }

      // A restart on the same database renumbers nothing: the cursor still reads.
      const restarted = await serve(env, tenant);
      try {
        assert.deepEqual((await restarted.page(before)).data, []);
      } finally {
        await restarted.server.close();
      }

      // Restored from a cluster whose counter was ahead: the rows would be hidden without the move.
      await restore(env, [NUMBERED_ELSEWHERE, AHEAD]);
      const second = await serve(env, tenant);
      let renumbered: string;
      try {
        const stale = await second.changes(before);
        assert.equal(stale.status, 400);
        assert.deepEqual(stale.body.errors, [{ field: 'after', message: STALE_AFTER_MESSAGE }]);
        const again = await second.page();
        assert.deepEqual(
          again.data.map((p) => p.code),
          ['P1', 'P2'],
          'every record served again from the start',
        );
        assert.deepEqual(cursorFields(again.next), ['g', 'k', 'r', 't', 'x']);
        // New writes come after the new cursors.
        await second.upload(['P3']);
        assert.deepEqual(
          (await second.page(again.next)).data.map((p) => p.code),
          ['P3'],
        );
        renumbered = again.next;
      } finally {
        await second.server.close();
      }

      // Restored from a cluster whose counter was behind this one's: no row is ahead, but the cursors
      // clients hold may be, and new writes would land behind them. The command renumbers too, once.
      await restore(env, [NUMBERED_ELSEWHERE]);
      assert.match(
        await cliMigrate(env),
        /cursors from before are refused \(generation \d+\).*; 0 records moved/,
      );
      assert.doesNotMatch(await cliMigrate(env), /refused/);
      const third = await serve(env, tenant);
      try {
        assert.equal((await third.changes(renumbered)).status, 400, 'a cursor of the previous generation');
        const all = await third.page();
        assert.deepEqual(
          all.data.map((p) => p.code),
          ['P1', 'P2', 'P3'],
        );
        assert.notDeepEqual(all.next, renumbered);
        assert.deepEqual((await third.page(all.next)).data, []);
      } finally {
        await third.server.close();
      }
    });
  });
}
