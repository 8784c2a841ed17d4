import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CLI, cliLaunch, type ServerProcess, spawnServer, waitReady } from '../../kit/server-process.js';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { type Answer, httpTransport, type ServiceRequest, type Transport } from '../../kit/transport.js';
import { outputOf } from '../helpers/child-output.js';
import { csv, feedKeys, resultsOf } from '../helpers/jobs.js';
import { newDatabaseSettings, servedBackends } from '../helpers/served-settings.js';

/*
 * A job whose process is SIGKILLed while it writes (extensions.md 12, issue 25), on the process
 * `sfa-backoffice serve` runs: started again, the service resumes the job after its last committed
 * block; the job succeeds with the counts of a run without the kill, and each row is once in the feed.
 *
 * The process runs this tree's sources (src/cli.ts under tsx, as test/body-threads/batch-worker-served
 * does), not a dist/ built some other time, with the node options and environment of the command's
 * first line (bin/sfa-backoffice.js). Its requests stay within the rate limit of the subscription key
 * (1,200 a minute): a 429 is sent again after its Retry-After, and the job is polled at a pace set by
 * the RateLimit fields of the last answer.
 */

const ROWS = 200_000;
const ROOT = join(import.meta.dirname, '..', '..');
const TSX = import.meta.resolve('tsx');

/**
 * A command file that starts src/cli.ts as bin/sfa-backoffice.js starts dist/cli.js: the same first
 * line (kit/server-process.ts reads the node options and environment from it). Removed after the file.
 */
function sourcesCommand(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-sources-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const shebang = readFileSync(CLI, 'utf8').split('\n', 1)[0]!;
  const file = join(dir, 'sfa-backoffice-sources.mjs');
  writeFileSync(
    file,
    `${shebang}\nimport ${JSON.stringify(new URL('src/cli.ts', `file://${ROOT}/`).href)};\n`,
  );
  return file;
}

const SOURCES = sourcesCommand();
const UNDER_TSX = ['--import', TSX];

/** A command of the sources' CLI, to its end; its stdout. */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const launch = cliLaunch(SOURCES);
  const child = spawn(process.execPath, [...launch.nodeOptions, ...UNDER_TSX, SOURCES, ...args], {
    env: { ...launch.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { code, stdout, stderr } = await outputOf(child);
  assert.equal(code, 0, `sfa-backoffice ${args.join(' ')} exited ${code}, not 0: ${stderr}`);
  return stdout;
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * A transport that sends a request again after the answer's Retry-After when it gets 429 (the feed
 * walk and the results read many pages): a test's failure is then never the rate limit's.
 */
function withinRateLimit(transport: Transport): Transport {
  return {
    async send(request: ServiceRequest): Promise<Answer> {
      for (;;) {
        const answer = await transport.send(request);
        if (answer.status !== 429) return answer;
        const retryAfter = Number(answer.headers['retry-after']);
        assert.ok(retryAfter >= 0, `a 429 without a Retry-After: ${JSON.stringify(answer.headers)}`);
        await pause(retryAfter * 1000);
      }
    },
  };
}

/**
 * How long to wait before the next poll: the requests the window has left (RateLimit-Remaining),
 * a quarter of them spread over the seconds until it resets (RateLimit-Reset), so polling leaves
 * most of the window to the rest of the test; at least 100 ms.
 */
function nextPollAfterMs(answer: Answer): number {
  const remaining = Number(answer.headers['ratelimit-remaining']);
  const resetSeconds = Number(answer.headers['ratelimit-reset']);
  if (!Number.isFinite(remaining) || !Number.isFinite(resetSeconds)) return 1_000;
  return Math.max(100, (resetSeconds * 1000) / Math.max(1, remaining / 4));
}

/** Polls the job until `done` holds of it (at most `ms`); its last state. */
async function pollJob(
  client: () => TenantClient,
  id: string,
  done: (job: any) => boolean,
  what: string,
  ms = 300_000,
): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await client().get(`/v1/jobs/${id}`);
    assert.equal(
      answer.status,
      200,
      `job ${id} not read while waiting until ${what}: ${answer.status} ${answer.text}`,
    );
    if (done(answer.body)) return answer.body;
    assert.ok(Date.now() < deadline, `job ${id} did not reach "${what}" in ${ms} ms: ${answer.text}`);
    await pause(nextPollAfterMs(answer));
  }
}

for (const backend of servedBackends) {
  describe(`a bulk job SIGKILLed while writing, on ${backend}`, () => {
    test('the service started again resumes it: exact counts, each row once in the change feed', async () => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...(await newDatabaseSettings(backend)),
        JOB_LEASE_SECONDS: '5',
        LOG_LEVEL: 'silent',
      };
      if (backend === 'pglite') delete env.DATABASE_URL;
      await cli(['migrate'], env);
      const tenant = JSON.parse(await cli(['tenant', 'create', '--name', 'bulk', '--json'], env));
      let output = '';
      const start = async () => {
        const server = await spawnServer({
          env,
          cli: SOURCES,
          nodeArgs: UNDER_TSX,
          onOutput: (chunk) => (output += chunk),
        });
        await waitReady(server, 60_000, () => output.slice(-2_000));
        return server;
      };
      let server: ServerProcess = await start();
      // A failed assertion must not leave the served process (and this file's run) alive.
      after(() => server.kill());
      let client = await tenantClient(withinRateLimit(httpTransport(server.url)), tenant);
      const products = await client.post('/api/products/batch-create', [
        { code: 'P1', description: 'one' },
        { code: 'P2', description: 'two' },
      ]);
      assert.equal(products.status, 201, `products not created: ${products.text}`);
      const rows: string[][] = [];
      for (let n = 0; n < ROWS - 1; n++) rows.push([n % 2 ? 'P1' : 'P2', `L${n}`, `${n % 997}.5`]);
      rows.push([...rows[0]!.slice(0, 2), '9.99']);
      const created = await client.post('/v1/jobs', { resource: 'prices', format: 'csv' });
      assert.equal(created.status, 201, `job not created: ${created.text}`);
      const id = created.body.id as string;
      const put = await client.send({
        method: 'PUT',
        path: `/v1/jobs/${id}/parts/1`,
        headers: { 'content-type': 'text/csv' },
        body: csv(['product_code', 'price_list', 'price'], rows),
      });
      assert.equal(put.status, 200, `part 1 of job ${id} not taken: ${put.text}`);
      const completed = await client.send({ method: 'POST', path: `/v1/jobs/${id}/complete` });
      assert.equal(completed.status, 202, `job ${id} not completed: ${completed.text}`);

      await pollJob(
        () => client,
        id,
        (job) => job.rows.created > 0,
        'a block is written',
      );
      await server.kill();

      server = await start();
      client = client.over(withinRateLimit(httpTransport(server.url)));
      const resumed = (await client.get(`/v1/jobs/${id}`)).body;
      assert.equal(resumed.state, 'writing', `job ${id} was ${resumed.state} after the kill, not writing`);
      assert.ok(
        resumed.rows.created < ROWS - 1,
        `job ${id} had written every row before the kill (${resumed.rows.created} created)`,
      );
      const done = await pollJob(
        () => client,
        id,
        (job) => job.state !== 'writing',
        'the job ends',
      );
      assert.equal(
        done.state,
        'succeeded',
        `job ${id} ended ${done.state}, not succeeded: ${JSON.stringify(done)}`,
      );
      // The last row repeats the first one's key: over the whole file, the last occurrence wins.
      const expected = { received: ROWS, invalid: 0, created: ROWS - 1, updated: 0, ignored: 1 };
      assert.deepEqual(
        done.rows,
        expected,
        `job ${id} counted ${JSON.stringify(done.rows)}, not a run without the kill's ${JSON.stringify(expected)}`,
      );
      const createdLines = await resultsOf(client, id, 'created');
      assert.equal(
        createdLines.length,
        ROWS - 1,
        `job ${id} lists ${createdLines.length} created lines, not ${ROWS - 1}`,
      );
      assert.equal(
        new Set(createdLines.map((row) => row.line)).size,
        ROWS - 1,
        `job ${id} lists a created line more than once`,
      );
      const keys = await feedKeys(client, 'prices', ['product_code', 'price_list'], ROWS - 1);
      assert.equal(
        keys.length,
        ROWS - 1,
        `the change feed holds ${keys.length} prices, not each row once (${ROWS - 1})`,
      );
      assert.equal(new Set(keys).size, ROWS - 1, 'a price is more than once in the change feed');
      await server.stop();
    });
  });
}
