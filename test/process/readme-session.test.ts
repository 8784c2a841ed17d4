import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { test } from 'node:test';

import { startFirstServe } from '../helpers/first-start.js';
import { readmeBlock, runBash } from './readme-shell.js';

/** The shell block of the README's "Getting started". */
const firstSessionBlock = () => readmeBlock('Getting started');

/** The block's commands, a line continued with a backslash joined to the next; comments dropped. */
function commands(block: string): string[] {
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** The server a newcomer starts, with the credentials it prints, as the README's placeholders. */
async function startServer(): Promise<{ credentials: Record<string, string>; stop(): Promise<void> }> {
  const server = await startFirstServe({ LOG_LEVEL: 'warn' });
  return {
    credentials: {
      BASE: server.printed('base URL'),
      KEY: server.printed('subscription key'),
      CLIENT_ID: server.printed('client id'),
      CLIENT_SECRET: server.printed('client secret'),
    },
    async stop() {
      assert.equal(await server.stop(), 0);
    },
  };
}

const MARK = '\n@@readme-session-step@@\n';

test("the README's Getting started runs as written against a freshly started server", async () => {
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
  const { stdout, stderr } = await runBash(shell, tmpdir());
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
