import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { spawnServer, waitReady } from '../../kit/server-process.js';
import { HEAP_GROWTH_FLAG } from '../../src/v8-by-engine.js';

/*
 * src/v8-by-engine.ts: V8 favours speed over memory in the served process on PostgreSQL (the embedded
 * engine's setting is in memory-trim.test.ts). The flag in the log is the value the setter returns.
 */
const serverUrl = process.env.TEST_DATABASE_URL;

test('the served process on PostgreSQL lets the old generation grow as much as it holds, as its debug log shows', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL (CI sets it)',
}, async () => {
  const scratch = await scratchPostgresDatabase(serverUrl!);
  let output = '';
  const server = await spawnServer({
    env: { ...process.env, DATABASE_URL: scratch.url, DATA_DIR: '', LOG_LEVEL: 'debug' },
    onOutput: (chunk) => {
      output += chunk.toString();
    },
  });
  after(async () => {
    await server.kill();
    await scratch.drop();
  });
  await waitReady(server, 60_000, () => output.slice(-4000));
  const line = output.split('\n').find((text) => text.includes('"V8 favours speed over memory"'));
  assert.ok(line, output.slice(-2000));
  assert.equal(JSON.parse(line).v8, HEAP_GROWTH_FLAG);
  assert.ok(!output.includes('--optimize-for-size'), 'the embedded engine’s setting is not used');
});
