import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { freePort } from '../../kit/free-port.js';
import { CLI } from '../../kit/server-process.js';
import { deliveryLoopAnswers, readmeBlock, runBash, servedShell } from './readme-shell.js';

/*
 * The README's recipes one after the other, as a reader runs them, against one served process: each
 * block after the ones before it, so a step that only works on a fresh server (the delivery loop after
 * Getting started acknowledged the demo's deliveries) is caught. What each block answers in detail is
 * readme-session.test.ts's and readme-recipes.test.ts's; here every block runs and shows something.
 */

const PLACEHOLDERS = /^(BASE|KEY|CLIENT_ID|CLIENT_SECRET)=.*$/gm;

test("the README's recipes run in order against one served process, each showing something", async () => {
  const served = await servedShell({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
  const { cwd } = served;
  const prelude = `${served.prelude}\nHOOK_PORT=${await freePort()}`;
  const bash = async (script: string) => (await runBash(`set -e\n${prelude}\n${script}`, cwd)).stdout;

  // Getting started, its placeholders filled by the prelude: the demo's two deliveries acknowledged.
  const started = await bash(readmeBlock('Getting started').replace(PLACEHOLDERS, ''));
  assert.match(started, /"acknowledged":2/);

  // The delivery loop after it: its own deliveries, so it still has something to show.
  const loop = deliveryLoopAnswers(await bash(readmeBlock("The ERP's delivery loop")));
  assert.equal(loop.created.created, 2);
  assert.equal(loop.acknowledged.acknowledged, 1, "only the run's delivery the ERP took");

  // Bulk jobs: the job ends, its failed row listed.
  const job = (await bash(readmeBlock('Loading a file: bulk jobs'))).trim().split('\n');
  assert.equal(JSON.parse(job[2]!).state, 'succeeded', job.join('\n'));
  assert.equal(JSON.parse(job[3]!).key.code, 'BULK-3');

  // The same kind of job in one command (`npx sfa-backoffice` is this checkout's command): exit
  // status 2, the skipped row's result beside the file, the job in the list.
  const command = `npx() { if [ "$1" = sfa-backoffice ]; then shift; "${CLI}" "$@"; else command npx "$@"; fi; }`;
  const uploaded = await bash(`${command}\n${readmeBlock('In one command: `sfa-backoffice upload`')}`);
  assert.match(uploaded, /^exit status 2$/m, uploaded);
  const skipped = uploaded
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { key?: { code?: string }; errors?: { field: string }[] });
  assert.deepEqual(
    skipped.map((row) => [row.key?.code, row.errors?.[0]?.field]),
    [['ONE-2', 'description']],
    uploaded,
  );
  assert.match(uploaded, /succeeded/, 'the job in the list');

  // Webhooks: the receiver (in the background, ended with the test) gets every customer.
  const customers = JSON.parse(await bash(`curl -sf "\${AUTH[@]}" "$BASE/v1/customers?limit=1"`)).meta
    .totalItems as number;
  const receiver = spawn('bash', ['-c', `${prelude}\n${readmeBlock('Receiving webhooks')}\nwait`], {
    cwd,
    detached: true,
    stdio: 'ignore',
  });
  after(() => process.kill(-receiver.pid!, 'SIGKILL'));
  const received = () => {
    try {
      return readFileSync(join(cwd, 'received.ndjson'), 'utf8').trim().split('\n').length;
    } catch {
      return 0;
    }
  };
  // The service's own background work delivers: waited for by polling, as a reader would look.
  const deadline = Date.now() + 45_000;
  while (received() < customers) {
    assert.ok(Date.now() < deadline, `every customer reaches the receiver (${received()} of ${customers})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  // Downloading changes: the first load brings every customer.
  await bash(readmeBlock('Downloading changes'));
  const pages = readFileSync(join(cwd, 'customers-pages.json'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { data: unknown[] });
  assert.equal(
    pages.reduce((sum, page) => sum + page.data.length, 0),
    customers,
  );

  // Retrying safely, after Getting started wrote the same stock: written once, now ignored.
  const retried = JSON.parse(
    await bash(`uuidgen() { echo readme-in-order-1; }\n${readmeBlock('Retrying safely')}`),
  );
  assert.equal(retried.statusCode, 201, JSON.stringify(retried));
  assert.equal(retried.items[0].outcome, 'ignored');
});
