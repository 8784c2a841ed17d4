import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { freePort } from '../../kit/free-port.js';
import { customer } from '../helpers/read-data.js';
import { deliveryLoopAnswers, readmeBlock, runBash, servedShell } from './readme-shell.js';

/*
 * The README's recipes for the change feed ("Downloading changes") and for retries ("Retrying
 * safely") run as written, in bash, against a freshly started server: an integrator copies them.
 */

async function bash(script: string, cwd: string): Promise<string> {
  return (await runBash(script, cwd)).stdout;
}

interface FeedPage {
  data: { code: string }[];
  next: string;
  hasMore: boolean;
}

test("the README's change feed and retry recipes run as written", async () => {
  const { cwd, prelude } = await servedShell();
  const post = (path: string, body: unknown) =>
    `curl -sf -o /dev/null "\${AUTH[@]}" -H 'Content-Type: application/json' "$BASE${path}" -d '${JSON.stringify(body)}'`;
  const pages = () =>
    readFileSync(join(cwd, 'customers-pages.json'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as FeedPage);
  const cursor = () => readFileSync(join(cwd, 'customers.cursor'), 'utf8').trim();

  // Downloading changes: the first load, then a poll that finds nothing new.
  const feed = readmeBlock('Downloading changes');
  const total = JSON.parse(await bash(`${prelude}\ncurl -sf "\${AUTH[@]}" "$BASE/v1/customers?limit=1"`, cwd))
    .meta.totalItems;
  assert.ok(total > 0, 'the demo tenant has customers');
  await bash(`${prelude}\n${feed}`, cwd);
  const loaded = pages();
  const loadCodes = loaded.flatMap((page) => page.data.map((record) => record.code));
  assert.equal(loadCodes.length, total, 'the first load brings every customer');
  assert.equal(new Set(loadCodes).size, total, 'each once');
  const poll = loaded.at(-1)!;
  assert.deepEqual(poll.data, [], 'the poll right after the load finds nothing');
  assert.equal(poll.hasMore, false);
  assert.equal(poll.next, loaded.at(-2)!.next, 'and answers the same cursor');
  assert.equal(cursor(), poll.next);

  // A customer written later, and one changed: the next run of the recipe brings exactly those two.
  await bash(
    `${prelude}\n${post('/api/customers/batch-create', [customer('README-NEW'), { ...customer(loadCodes[0]!), name: 'Renamed' }])}\n${feed}`,
    cwd,
  );
  const later = pages().slice(loaded.length);
  assert.deepEqual(later[0]!.data.map((record) => record.code).sort(), ['README-NEW', loadCodes[0]].sort());
  assert.deepEqual(later[1]!.data, []);
  assert.equal(cursor(), later[0]!.next);

  // A cursor the service refuses (one of another numbering of the feed, as after a restore into
  // another server): the recipe downloads everything again, from the start.
  const stale = JSON.parse(Buffer.from(cursor(), 'base64url').toString('utf8'));
  writeFileSync(
    join(cwd, 'customers.cursor'),
    `${Buffer.from(JSON.stringify({ ...stale, g: 12345 })).toString('base64url')}\n`,
  );
  await bash(`${prelude}\n${feed}`, cwd);
  const reloaded = pages();
  const reloadedCodes = reloaded.flatMap((page) => page.data.map((record) => record.code));
  assert.equal(new Set(reloadedCodes).size, total + 1, 'every customer again, the new one included');
  assert.deepEqual(reloaded.at(-1)!.data, []);
  assert.equal(cursor(), reloaded.at(-1)!.next);

  // Retrying safely: the product first (as in Getting started), then the loop, twice with one key:
  // the second answer is the first byte for byte (a run without the key would now say "ignored").
  const retry = readmeBlock('Retrying safely');
  const product = post('/api/products/batch-create', [{ code: 'P-1', description: 'Coffee 500 g' }]);
  const withKey = (key: string) => `${prelude}\nuuidgen() { echo '${key}'; }\n${retry}`;
  await bash(`${prelude}\n${product}`, cwd);
  const first = await bash(withKey('readme-job-1'), cwd);
  const answer = JSON.parse(first);
  assert.equal(answer.statusCode, 201, first);
  assert.equal(answer.created, 1);
  assert.deepEqual(answer.items, [
    { index: 0, key: { product_code: 'P-1', location: 'BOG-01' }, outcome: 'created' },
  ]);
  assert.equal(await bash(withKey('readme-job-1'), cwd), first, 'the repeat is the replay');
  const anotherKey = JSON.parse(await bash(withKey('readme-job-2'), cwd));
  assert.equal(anotherKey.created, 0, 'another key runs the batch again: nothing new to create');
  assert.equal(anotherKey.items[0].outcome, 'ignored');
});

test("the README's ERP delivery loop runs as written: reject with a reason, requeue, acknowledge", async () => {
  const { cwd, prelude } = await servedShell();
  const get = async (path: string) =>
    JSON.parse(await bash(`${prelude}\ncurl -sf "\${AUTH[@]}" "$BASE${path}"`, cwd));
  const before = (await get('/v1/deliveries/pending?limit=500')).data.map((d: { code: string }) => d.code);
  assert.ok(before.length > 0, 'the demo tenant has deliveries pending');

  const loop = readmeBlock("The ERP's delivery loop");
  const first = deliveryLoopAnswers(await bash(`${prelude}\n${loop}`, cwd));
  // The two deliveries of the run are taken with the demo's pending ones, but the refused one.
  assert.equal(first.created.created, 2, JSON.stringify(first.created));
  assert.equal(first.acknowledged.acknowledged, before.length + 1);
  // Run again (as after Getting started, which acknowledged the demo's): two new deliveries, the same steps.
  // RUN is the second the block starts in: the second run's is another, without waiting for it.
  const second = deliveryLoopAnswers(await bash(`${prelude}\ndate() { echo 1; }\n${loop}`, cwd));
  assert.equal(second.acknowledged.acknowledged, 1, 'the second run has its own deliveries to show');
  assert.deepEqual((await get('/v1/deliveries/pending')).data, []);
  assert.deepEqual((await get('/v1/deliveries/rejected')).data, []);
});

test("the README's webhook receiver gets every customer, signed, each once, then each change", async () => {
  const served = await servedShell({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
  const { cwd } = served;
  const prelude = `${served.prelude}\nHOOK_PORT=${await freePort()}`;
  const total = JSON.parse(await bash(`${prelude}\ncurl -sf "\${AUTH[@]}" "$BASE/v1/customers?limit=1"`, cwd))
    .meta.totalItems;
  // The block starts the receiver in the background: its shell's process group ends with the test.
  const child = spawn('bash', ['-c', `${prelude}\n${readmeBlock('Receiving webhooks')}\nwait`], {
    cwd,
    detached: true,
    stdio: 'ignore',
  });
  after(() => process.kill(-child.pid!, 'SIGKILL'));
  const received = () => {
    try {
      return readFileSync(join(cwd, 'received.ndjson'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { code: string; name: string });
    } catch {
      return [];
    }
  };
  const until = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + 45_000;
    while (!done()) {
      assert.ok(Date.now() < deadline, `${what}: ${received().length} records`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await until(() => received().length >= total, 'every customer arrives');
  const codes = received().map((record) => record.code);
  assert.equal(codes.length, total);
  assert.equal(new Set(codes).size, total, 'each once');
  await bash(
    `${prelude}\ncurl -sf -o /dev/null "\${AUTH[@]}" -H 'Content-Type: application/json' "$BASE/api/customers/batch-create" -d '${JSON.stringify([customer('HOOK-NEW')])}'`,
    cwd,
  );
  await until(() => received().some((record) => record.code === 'HOOK-NEW'), 'the new customer arrives');
  assert.equal(received().length, total + 1);
});

test("the README's bulk job recipe runs as written: two parts, completed, waited for, its failed rows", async () => {
  const { cwd, prelude } = await servedShell();
  const output = (await bash(`${prelude}\n${readmeBlock('Loading a file: bulk jobs')}`, cwd))
    .trim()
    .split('\n');
  // The two PUTs answer their parts; then the job's end and its one failed row.
  assert.deepEqual(JSON.parse(output[0]!), { part: 1, bytes: 60 });
  assert.equal(JSON.parse(output[1]!).part, 2);
  assert.deepEqual(JSON.parse(output[2]!), {
    state: 'succeeded',
    error: null,
    rows: { received: 4, invalid: 1, created: 3, updated: 0, ignored: 0 },
  });
  assert.deepEqual(JSON.parse(output[3]!), {
    line: 4,
    key: { code: 'BULK-3' },
    errors: [{ field: 'description', message: 'Field is required' }],
  });
  assert.equal(output.length, 4);
});
