import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { spawnServer, waitReady } from '../../kit/server-process.js';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';

const quiet = { PORT: '0', LOG_LEVEL: 'silent' };

test('first start on an empty embedded database makes the demo tenant once; a restart does not', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sfa-start-'));
  try {
    const first = await startServer(loadConfig({ ...quiet, DATA_DIR: dataDir }));
    try {
      assert.equal(first.demo?.tenant, 'demo');
      const [row] = await first.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
      assert.ok(row!.n > 0, 'demo data loaded');
    } finally {
      await first.close();
    }
    const second = await startServer(loadConfig({ ...quiet, DATA_DIR: dataDir }));
    try {
      assert.equal(second.demo, undefined);
      const [row] = await second.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');
      assert.equal(row!.n, 1);
    } finally {
      await second.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

const serverUrl = process.env.TEST_DATABASE_URL;

test('a start on an empty PostgreSQL database never makes a demo tenant', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL (CI sets it)',
}, async () => {
  const scratch = await scratchPostgresDatabase(serverUrl!);
  try {
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: scratch.url }));
    try {
      assert.equal(server.demo, undefined);
      const [row] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tenants');
      assert.equal(row!.n, 0);
    } finally {
      await server.close();
    }
  } finally {
    await scratch.drop();
  }
});

test('serve on PostgreSQL turns V8 towards speed (the memory reducer off; src/v8-by-engine.ts)', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL (CI sets it)',
}, async () => {
  const scratch = await scratchPostgresDatabase(serverUrl!);
  let output = '';
  try {
    const server = await spawnServer({
      env: { ...process.env, DATABASE_URL: scratch.url, LOG_LEVEL: 'debug' },
      onOutput: (chunk) => {
        output += chunk.toString();
      },
    });
    try {
      await waitReady(server, 60_000, () => output.slice(-4000));
      assert.match(output, /"v8":"--no-memory-reducer".*"PostgreSQL: V8 favours speed over memory"/);
      assert.doesNotMatch(output, /--optimize-for-size/);
    } finally {
      await server.stop(10_000);
    }
  } finally {
    await scratch.drop();
  }
});
