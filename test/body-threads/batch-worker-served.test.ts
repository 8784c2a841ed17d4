import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { printedValue } from '../../kit/welcome-text.js';

/*
 * The batch worker thread's module is found both where the service runs: from the sources under tsx
 * (the worker inherits --import tsx and loads batch-worker.ts) and from the build (dist/, where it is
 * batch-worker.js). Each run starts `serve` on a new embedded data directory, as a first start does,
 * and posts a body large enough for the worker.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILT_WORKER = join(ROOT, 'dist', 'body-threads', 'batch-worker.js');

async function serveAndPost(command: string[]): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sfa-batch-worker-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  delete env.METRICS_PORT;
  const server = spawn(process.execPath, [...command, 'serve'], { cwd: ROOT, env });
  after(() => server.kill('SIGKILL'));
  let stdout = '';
  server.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  let stderr = '';
  server.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const deadline = Date.now() + 60_000;
  while (!/curl [^\n]*\n/.test(stdout)) {
    assert.ok(Date.now() < deadline, `the server did not start: ${stdout} ${stderr}`);
    assert.equal(server.exitCode, null, `serve ended: ${stdout} ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const printed = (label: string) => printedValue(stdout, label)!;
  const base = printed('base URL');
  const key = printed('subscription key');
  const tokenAnswer = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { 'subscription-key': key, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: printed('client id'),
      client_secret: printed('client secret'),
    }),
  });
  assert.equal(tokenAnswer.status, 200);
  const headers = {
    'subscription-key': key,
    authorization: `Bearer ${(await tokenAnswer.json()).access_token}`,
    'content-type': 'application/json',
  };
  const products = Array.from({ length: 4_000 }, (_, n) => ({
    code: `SRV${n}`,
    description: 'd'.repeat(80),
  }));
  const valid = await fetch(`${base}/api/products/batch-create`, {
    method: 'POST',
    headers,
    body: JSON.stringify(products),
  });
  assert.equal(valid.status, 201, await valid.clone().text());
  assert.equal((await valid.json()).created, 4_000);
  const invalid = await fetch(`${base}/api/products/batch-create`, {
    method: 'POST',
    headers,
    body: JSON.stringify([...products, { code: 'SRV-X', nope: 1 }]),
  });
  assert.equal(invalid.status, 400);
  assert.deepEqual((await invalid.json()).errors, [
    {
      index: 4_000,
      errors: [
        { field: 'description', message: 'Field is required' },
        { field: 'nope', message: 'Unknown field' },
      ],
    },
  ]);
}

describe('the batch worker thread in a served process', () => {
  test('from the sources under tsx', async () => {
    await serveAndPost(['--import', 'tsx', join(ROOT, 'src', 'cli.ts')]);
  });

  test('from the build (dist/)', async () => {
    // npm ci builds (prepare); a missing worker file is a build that lost it, not a reason to skip.
    assert.ok(existsSync(BUILT_WORKER), `${BUILT_WORKER} exists (npm run build)`);
    await serveAndPost([join(ROOT, 'bin', 'sfa-backoffice.js')]);
  });
});
