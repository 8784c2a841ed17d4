import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The shell block of the README's "A first session". */
function firstSessionBlock(): string {
  const section = readme.split(/^## /m).find((part) => part.startsWith('A first session\n'));
  assert.ok(section, 'the README has a "## A first session" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the first session has a sh block');
  return block;
}

/** The block's commands, a line continued with a backslash joined to the next; comments dropped. */
function commands(block: string): string[] {
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** Starts `sfa-backoffice serve` (src/cli.ts, what bin/sfa-backoffice.js runs once built) on a new data directory. */
async function startServer(): Promise<{ credentials: Record<string, string>; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-readme-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1' };
  delete env.DATABASE_URL;
  delete env.METRICS_PORT;
  env.LOG_LEVEL = 'warn';
  const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve'], {
    cwd: ROOT,
    env,
  });
  let stdout = '';
  server.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  server.stderr.resume();
  const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  after(() => server.kill('SIGKILL'));
  const deadline = Date.now() + 60_000;
  while (!/^ {2}docs +\S+$/m.test(stdout)) {
    assert.ok(Date.now() < deadline, `no credentials printed: ${stdout}`);
    assert.equal(server.exitCode, null, `serve ended: ${stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const field = (label: string) => {
    const value = new RegExp(`^ {2}${label} +(\\S+)$`, 'm').exec(stdout)?.[1];
    assert.ok(value, `"${label}" printed at first start`);
    return value;
  };
  return {
    credentials: {
      BASE: field('base URL'),
      KEY: field('subscription key'),
      CLIENT_ID: field('client id'),
      CLIENT_SECRET: field('client secret'),
    },
    async stop() {
      server.kill('SIGTERM');
      assert.equal(await exited, 0);
    },
  };
}

const MARK = '\n@@readme-session-step@@\n';

test("the README's first session runs as written against a freshly started server", async () => {
  const list = commands(firstSessionBlock());
  const { credentials, stop } = await startServer();

  // The placeholders a person fills in with what the server printed.
  const script = list.map((command) => {
    const name = /^([A-Z_]+)=/.exec(command)?.[1];
    if (name !== undefined && name in credentials) return `${name}='${credentials[name]}'`;
    return command;
  });
  assert.deepEqual(
    Object.keys(credentials).filter((name) => !script.includes(`${name}='${credentials[name]}'`)),
    [],
    'the block sets BASE, KEY, CLIENT_ID and CLIENT_SECRET on lines of their own',
  );

  // Each command's output is marked off; every curl call also reports its status and URL on stderr.
  const shell = [
    'set -euo pipefail',
    'curl() { command curl --write-out \'%{stderr}%{http_code} %{url_effective}\\n\' "$@"; }',
    ...script.flatMap((command) => [command, `printf '${MARK.replace(/\n/g, '\\n')}'`]),
    'printf %s "$TOKEN"',
  ].join('\n');
  const child = spawn('bash', ['-c', shell], { cwd: tmpdir() });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `the session failed:\n${stderr}\n${stdout}`);
  await stop();

  const outputs = stdout.split(MARK);
  const token = outputs.pop()!;
  assert.equal(outputs.length, list.length);
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'TOKEN holds an access token');

  // Every request was answered 2xx, the token request 200.
  const requests = stderr
    .trim()
    .split('\n')
    .map((line) => {
      const [status, url] = line.split(' ');
      return { status: Number(status), path: new URL(url!).pathname };
    });
  assert.deepEqual(
    requests.filter((request) => request.status < 200 || request.status > 299),
    [],
    'every call succeeds',
  );
  assert.deepEqual(
    requests.find((request) => request.path === '/token'),
    { status: 200, path: '/token' },
  );

  const seen = new Set<string>();
  for (const [n, command] of list.entries()) {
    if (!command.startsWith('curl ')) {
      assert.equal(outputs[n], '', `${command} prints nothing`);
      continue;
    }
    const body = JSON.parse(outputs[n]!);
    const path = /\$BASE(\/[\w/-]*)/.exec(command)?.[1];
    assert.ok(path, `${command} calls $BASE`);
    seen.add(path);
    if (path === '/health') {
      // The answer the README shows in the step's comment.
      const shown = /# 0\.[^{]*(\{.*\})$/m.exec(firstSessionBlock())?.[1];
      assert.deepEqual(body, JSON.parse(shown ?? 'null'), 'GET /health answers as the README shows');
    } else if (path.endsWith('/batch-create')) {
      assert.equal(body.statusCode, 201, `${path}: ${outputs[n]}`);
      assert.equal(body.created, 1, `${path}: ${outputs[n]}`);
    } else if (path === '/v1/customers' || path === '/v1/deliveries/pending') {
      assert.ok(Array.isArray(body.data) && body.data.length > 0, `${path} lists data: ${outputs[n]}`);
      assert.equal(typeof body.meta.totalItems, 'number');
    } else if (path === '/v1/deliveries/acknowledge') {
      assert.equal(body.statusCode, 200, outputs[n]);
      assert.equal(body.acknowledged, 2, outputs[n]);
      assert.deepEqual(body.notFound, []);
    } else {
      assert.fail(`no check for ${command}`);
    }
  }
  assert.deepEqual(
    [...seen].sort(),
    [
      '/api/products/batch-create',
      '/api/stocks/batch-create',
      '/health',
      '/v1/customers',
      '/v1/deliveries/acknowledge',
      '/v1/deliveries/pending',
    ],
    'the session covers the steps the README promises',
  );
});
