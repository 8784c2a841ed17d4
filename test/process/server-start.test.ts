import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
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
