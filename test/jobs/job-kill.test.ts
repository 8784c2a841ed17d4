import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { CLI, cliLaunch, type ServerProcess, spawnServer, waitReady } from '../../kit/server-process.js';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { outputOf } from '../helpers/child-output.js';
import { csv, feedKeys, resultsOf, until } from '../helpers/jobs.js';
import { newDatabaseSettings, servedBackends } from '../helpers/served-settings.js';

/*
 * A job whose process is SIGKILLed while it writes (extensions.md 12, issue 25), on the process
 * `sfa-backoffice serve` runs: started again, the service resumes the job after its last committed
 * block; the job succeeds with the counts of a run without the kill, and each row is once in the feed.
 */

const ROWS = 200_000;

/** A command of the built CLI, to its end; its stdout. */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const launch = cliLaunch();
  const child = spawn(process.execPath, [...launch.nodeOptions, CLI, ...args], {
    env: { ...launch.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { code, stdout, stderr } = await outputOf(child);
  assert.equal(code, 0, `sfa-backoffice ${args.join(' ')}: ${stderr}`);
  return stdout;
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
        const server = await spawnServer({ env, onOutput: (chunk) => (output += chunk) });
        await waitReady(server, 60_000, () => output.slice(-2_000));
        return server;
      };
      let server: ServerProcess = await start();
      // A failed assertion must not leave the served process (and this file's run) alive.
      after(() => server.kill());
      let client: TenantClient = await tenantClient(httpTransport(server.url), tenant);
      const products = await client.post('/api/products/batch-create', [
        { code: 'P1', description: 'one' },
        { code: 'P2', description: 'two' },
      ]);
      assert.equal(products.status, 201, products.text);
      const rows: string[][] = [];
      for (let n = 0; n < ROWS - 1; n++) rows.push([n % 2 ? 'P1' : 'P2', `L${n}`, `${n % 997}.5`]);
      rows.push([...rows[0]!.slice(0, 2), '9.99']);
      const created = await client.post('/v1/jobs', { resource: 'prices', format: 'csv' });
      const id = created.body.id as string;
      const put = await client.send({
        method: 'PUT',
        path: `/v1/jobs/${id}/parts/1`,
        headers: { 'content-type': 'text/csv' },
        body: csv(['product_code', 'price_list', 'price'], rows),
      });
      assert.equal(put.status, 200, put.text);
      assert.equal((await client.send({ method: 'POST', path: `/v1/jobs/${id}/complete` })).status, 202);

      const job = () => client.get(`/v1/jobs/${id}`).then((answer) => answer.body);
      await until(job, (body) => body.rows.created > 0, 'a block is written');
      await server.kill();

      server = await start();
      client = client.over(httpTransport(server.url));
      const resumed = await job();
      assert.equal(resumed.state, 'writing', 'killed while writing');
      assert.ok(resumed.rows.created < ROWS - 1, `killed before the end (${resumed.rows.created} created)`);
      const done = await until(job, (body) => body.state !== 'writing', 'the job ends');
      assert.equal(done.state, 'succeeded', done.error);
      // The last row repeats the first one's key: over the whole file, the last occurrence wins.
      assert.deepEqual(done.rows, { received: ROWS, invalid: 0, created: ROWS - 1, updated: 0, ignored: 1 });
      const createdLines = await resultsOf(client, id, 'created');
      assert.equal(createdLines.length, ROWS - 1);
      assert.equal(new Set(createdLines.map((row) => row.line)).size, ROWS - 1);
      const keys = await feedKeys(client, 'prices', ['product_code', 'price_list'], ROWS - 1);
      assert.equal(keys.length, ROWS - 1, 'each row once in the change feed');
      assert.equal(new Set(keys).size, ROWS - 1);
      await server.stop();
    });
  });
}
