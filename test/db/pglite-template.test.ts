import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { CLI, cliLaunch } from '../../kit/server-process.js';
import { openPglite, PGLITE_SETTINGS } from '../../src/db/pglite.js';
import { clusterTemplate, makeTemplate, templatePaths } from '../../src/db/pglite-template.js';

/*
 * The embedded default starts from a cluster made once (src/db/pglite-template.ts) instead of running
 * initdb in the serving process, and runs with PGlite settings sized for one connection.
 */

function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const clusterId = async (query: (sql: string) => Promise<{ id: string }[]>) =>
  (await query('SELECT system_identifier::text AS id FROM pg_control_system()'))[0]!.id;

/** The cluster identity of a cold data directory, read by opening it. */
async function identityOf(dir: string): Promise<string> {
  const db = await PGlite.create(dir);
  try {
    return await clusterId(async (sql) => (await db.query<{ id: string }>(sql)).rows);
  } finally {
    await db.close();
  }
}

describe('PGlite template', () => {
  test('a new data directory is a copy of the template cluster, and works', async () => {
    const template = await clusterTemplate();
    const dataDir = join(scratch('sfa-template-'), 'data');
    const db = await openPglite(dataDir);
    let id: string;
    try {
      await db.query('CREATE TABLE t (n int)');
      await db.query('INSERT INTO t VALUES (1)');
      assert.deepEqual(await db.query('SELECT n FROM t'), [{ n: 1 }]);
      id = await clusterId((sql) => db.query(sql));
    } finally {
      await db.close();
    }
    assert.equal(id, await identityOf(template.dir), 'the same cluster as the template: no initdb ran');
    assert.ok(existsSync(join(dataDir, 'PG_VERSION')));
  });

  test('a copy cut short (files but no PG_VERSION) is copied again, not opened half made', async () => {
    const dataDir = join(scratch('sfa-template-'), 'data');
    mkdirSync(join(dataDir, 'base'), { recursive: true });
    writeFileSync(join(dataDir, 'base', 'left-over'), 'from a copy that was killed');
    writeFileSync(join(dataDir, 'postgresql.conf'), 'broken = \n');
    const db = await openPglite(dataDir);
    try {
      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  test('an existing data directory is opened as it is, never overwritten', async () => {
    const dataDir = join(scratch('sfa-template-'), 'data');
    const first = await openPglite(dataDir);
    await first.query('CREATE TABLE kept (n int)');
    await first.query('INSERT INTO kept VALUES (42)');
    await first.close();
    const again = await openPglite(dataDir);
    try {
      assert.deepEqual(await again.query('SELECT n FROM kept'), [{ n: 42 }]);
    } finally {
      await again.close();
    }
  });

  test('in memory too, a database starts from the template and runs with the embedded settings', async () => {
    const db = await openPglite(undefined);
    try {
      const template = await clusterTemplate();
      assert.equal(await clusterId((sql) => db.query(sql)), await identityOf(template.dir));
      for (const [name, value] of Object.entries(PGLITE_SETTINGS)) {
        const [row] = await db.query<Record<string, string>>(`SHOW ${name}`);
        assert.equal(row![name], value, name);
      }
    } finally {
      await db.close();
    }
  });

  test('two makers at once (test files starting together) each end with a whole template', async () => {
    const root = scratch('sfa-template-root-');
    const template = templatePaths(root);
    await Promise.all([makeTemplate(template), makeTemplate(template)]);
    assert.ok(existsSync(join(template.dir, 'PG_VERSION')));
    assert.ok(readFileSync(template.tarball).byteLength > 1_000_000);
    // Whole: the directory opens, and the tarball loads into memory.
    await identityOf(template.dir);
    const loaded = await PGlite.create({ loadDataDir: new Blob([readFileSync(template.tarball)]) });
    assert.deepEqual((await loaded.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
    await loaded.close();
  });
});

describe('how the command starts', () => {
  test("npm start and sfa-backoffice run the server with the settings of the command's first line", async () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // npm start runs the file itself, so its first line (env -S) decides how node starts.
    assert.match(manifest.scripts.start!, /&& \.\/bin\/sfa-backoffice\.js serve$/);
    const server = spawn(CLI, ['serve'], {
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', DATA_DIR: join(scratch('sfa-launch-'), 'data') },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    after(() => server.kill('SIGKILL'));
    let stdout = '';
    server.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    const deadline = Date.now() + 60_000;
    while (!stdout.includes('base URL')) {
      assert.ok(Date.now() < deadline && server.exitCode === null, `serve did not start: ${stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // env execs node in its place: the child is the server itself.
    const cmdline = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
    const environ = readFileSync(`/proc/${server.pid}/environ`, 'utf8').split('\0');
    const launch = cliLaunch();
    assert.ok(launch.nodeOptions.length > 0 && Object.keys(launch.env).length > 0);
    for (const option of launch.nodeOptions) assert.ok(cmdline.includes(option), `${option} in ${cmdline}`);
    for (const [name, value] of Object.entries(launch.env))
      assert.ok(environ.includes(`${name}=${value}`), name);
    server.kill('SIGTERM');
  });
});
