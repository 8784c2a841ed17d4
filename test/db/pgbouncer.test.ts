import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Pgbouncer, startPgbouncer } from '../../kit/pgbouncer.js';
import { type ScratchDatabase, scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { openPostgres } from '../../src/db/postgres.js';
import { outputOf } from '../helpers/child-output.js';
import { csv, feedKeys, until } from '../helpers/jobs.js';

/*
 * PgBouncer in transaction pooling mode, as many deployments share one PostgreSQL: the commands and
 * two `sfa-backoffice serve` processes at once through it, with no pooler setting to ignore what the
 * service sends, and the statement timeouts still enforced.
 */

const serverUrl = process.env.TEST_DATABASE_URL;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const STATEMENT_TIMEOUT_MS = 1_000;
/** Rows of the bulk job: a dozen blocks, so that a kill lands while it writes. */
const JOB_ROWS = 120_000;

function command(args: string[], env: Record<string, string>): ChildProcess {
  const environment: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...env };
  delete environment.DATA_DIR;
  return spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: environment });
}

async function run(args: string[], env: Record<string, string>): Promise<string> {
  const { code, stdout, stderr } = await outputOf(command(args, env));
  assert.equal(code, 0, `sfa-backoffice ${args.join(' ')}: ${stderr}`);
  return stdout;
}

/** `sfa-backoffice serve` on a port of its own; resolves with its base URL once it listens. */
async function serve(env: Record<string, string>): Promise<string> {
  return (await serveProcess(env)).base;
}

async function serveProcess(env: Record<string, string>): Promise<{ base: string; child: ChildProcess }> {
  const child = command(['serve'], { ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
  after(() => {
    child.kill('SIGKILL');
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.resume();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
    if (listening) return { base: listening[1]!, child };
    assert.ok(Date.now() < deadline && child.exitCode === null, `serve did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('behind PgBouncer in transaction mode', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL',
}, () => {
  let bouncer: Pgbouncer;
  let scratch: ScratchDatabase;
  let url: string;
  before(async () => {
    bouncer = await startPgbouncer(serverUrl!);
    scratch = await scratchPostgresDatabase(serverUrl!);
    url = bouncer.url(scratch.url);
  });
  after(async () => {
    await bouncer?.stop();
    await scratch?.drop();
  });

  test('the commands and two serve processes at once work through it', async () => {
    const env = { DATABASE_URL: url, DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) };

    await run(['migrate'], env);
    const tenant = JSON.parse(await run(['tenant', 'create', '--name', 'pooled', '--json'], env));
    const instances = await Promise.all([serve(env), serve(env)]);

    const calls = instances.map(async (base, n) => {
      const client = await tenantClient(httpTransport(base), tenant);
      const products = Array.from({ length: 500 }, (_, at) => ({
        code: `P${n}-${at}`,
        description: 'pooled',
      }));
      assert.equal((await client.post('/api/products/batch-create', products)).status, 201);
      const stocks = products.map((product) => ({ product_code: product.code, location: 'L1', quantity: 5 }));
      assert.equal((await client.post('/api/stocks/batch-create', stocks)).status, 201);
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all([
          client.get('/v1/customers?limit=10'),
          client.get('/v1/deliveries/pending?limit=10'),
          client.post('/api/products/batch-create', products.slice(round * 10, round * 10 + 50)),
          client.transport.send({ path: '/ready' }),
        ]);
        assert.deepEqual(
          answers.map((answer) => answer.status),
          [200, 200, 201, 200],
        );
      }
    });
    await Promise.all(calls);

    // A pooler whose server stopped answering (PAUSE holds every query, as a server that is down
    // does until query_wait_timeout): the client gives up after the statement timeout (the pooler
    // takes its cancel for a waiting client's as one for an idle client, so pg's query_timeout just
    // after it ends the wait), not the pooler's. Which of the two ended the wait is what the answer
    // and the pooler's log say, not how long it took: a pooler that gave up has logged its
    // query_wait_timeout before it answers.
    const first = httpTransport(instances[0]!);
    await bouncer.admin('PAUSE');
    try {
      const ready = await first.send({ path: '/ready' });
      assert.equal(ready.status, 503);
      assert.deepEqual(ready.body, { status: 'unavailable' });
      assert.doesNotMatch(bouncer.log(), /query_wait_timeout/, 'the service gave up, not the pooler');
    } finally {
      await bouncer.admin('RESUME');
    }
    let attempts = 0;
    while ((await first.send({ path: '/ready' })).status !== 200) {
      assert.ok(++attempts < 20, 'ready again after RESUME');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  test('two instances share webhook deliveries; the one sending is SIGKILLed, the other repeats its delivery', async () => {
    const env = { DATABASE_URL: url, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' };
    await run(['migrate'], env);
    const tenant = JSON.parse(await run(['tenant', 'create', '--name', 'pooled-hooks', '--json'], env));
    // The first delivery is held without an answer (the instance sending it is killed meanwhile);
    // every later one is answered 204.
    const arrivals: { id: string; codes: string[] }[] = [];
    let holdFirst = true;
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        arrivals.push({
          id: String(request.headers['webhook-id']),
          codes: JSON.parse(body).data.map((record: { code: string }) => record.code),
        });
        if (holdFirst) {
          holdFirst = false;
          return;
        }
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    after(() => {
      receiver.closeAllConnections();
      receiver.close();
    });
    const hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    const instances = [await serveProcess(env), await serveProcess(env)];
    const client = await tenantClient(httpTransport(instances[0]!.base), tenant);
    const created = await client.post('/v1/webhooks', {
      url: hooks,
      resources: ['products'],
      batch_size: 10,
    });
    assert.equal(created.status, 201, created.text);
    const products = Array.from({ length: 30 }, (_, at) => ({ code: `H-${at}`, description: 'hooked' }));
    assert.equal((await client.post('/api/products/batch-create', products)).status, 201);

    const until = async (done: () => boolean, what: string, ms = 60_000) => {
      for (const deadline = Date.now() + ms; !done(); ) {
        assert.ok(Date.now() < deadline, what);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until(() => arrivals.length === 1, 'the first delivery arrives');
    const direct = openPostgres({ connectionString: scratch.url, poolSize: 1 });
    after(() => direct.close());
    const [row] = await direct.query<{ holder: string }>('SELECT holder FROM webhook_streams');
    const pid = Number(row!.holder.split(':')[1]);
    const sender = instances.find((instance) => instance.child.pid === pid);
    assert.ok(sender, `the holder ${row!.holder} is one of the two`);
    sender.child.kill('SIGKILL');
    // The other instance takes the stream once its lease expires, and sends the same delivery again.
    await until(
      () => new Set(arrivals.flatMap((a) => a.codes)).size === 30 && arrivals.length >= 4,
      'every product arrives',
    );
    assert.equal(arrivals[1]!.id, arrivals[0]!.id, 'the repeat carries the same webhook-id');
    assert.deepEqual(arrivals[1]!.codes, arrivals[0]!.codes);
    const survivor = instances.find((instance) => instance !== sender)!;
    const feed = await client
      .over(httpTransport(survivor.base))
      .get('/v1/changes?resource=products&limit=100');
    assert.equal(feed.status, 200, feed.text);
    assert.deepEqual(
      arrivals.slice(1).flatMap((a) => a.codes),
      feed.body.data.map((record: { code: string }) => record.code),
      "in the feed's order, each once after the repeat",
    );
  });

  test('two instances share bulk jobs; the one writing is SIGKILLed, the other resumes the job exactly', async () => {
    const env = { DATABASE_URL: url, JOB_LEASE_SECONDS: '5' };
    await run(['migrate'], env);
    const tenant = JSON.parse(await run(['tenant', 'create', '--name', 'pooled-jobs', '--json'], env));
    const instances = [await serveProcess(env), await serveProcess(env)];
    const client = await tenantClient(httpTransport(instances[0]!.base), tenant);
    const products = [
      { code: 'J1', description: 'one' },
      { code: 'J2', description: 'two' },
    ];
    assert.equal((await client.post('/api/products/batch-create', products)).status, 201);
    const rows: string[][] = [];
    for (let n = 0; n < JOB_ROWS; n++) rows.push([n % 2 ? 'J1' : 'J2', `L${n}`, `${n % 991}.5`]);
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

    const direct = openPostgres({ connectionString: scratch.url, poolSize: 1 });
    after(() => direct.close());
    const [row] = await direct.query<{ holder: string }>('SELECT holder FROM jobs WHERE id = $1', [id]);
    const pid = Number(row!.holder.split(':')[1]);
    const writer = instances.find((instance) => instance.child.pid === pid);
    assert.ok(writer, `the holder ${row!.holder} is one of the two`);
    writer.child.kill('SIGKILL');
    const [left] = await direct.query<{ state: string; created: number }>(
      'SELECT state, rows_created::int AS created FROM jobs WHERE id = $1',
      [id],
    );
    assert.equal(left!.state, 'writing');
    assert.ok(left!.created < JOB_ROWS, `killed before the end (${left!.created} written)`);

    const survivor = client.over(httpTransport(instances.find((instance) => instance !== writer)!.base));
    const done = await until(
      () => survivor.get(`/v1/jobs/${id}`).then((answer) => answer.body),
      (body) => body.state !== 'writing',
      'the other instance finishes the job',
    );
    assert.equal(done.state, 'succeeded', done.error);
    assert.deepEqual(done.rows, {
      received: JOB_ROWS,
      invalid: 0,
      created: JOB_ROWS,
      updated: 0,
      ignored: 0,
    });
    const keys = await feedKeys(survivor, 'prices', ['product_code', 'price_list'], JOB_ROWS);
    assert.equal(keys.length, JOB_ROWS, 'each row once in the change feed');
    assert.equal(new Set(keys).size, JOB_ROWS);
  });

  test('statement timeouts hold per transaction and never leak into the pooled server session', async () => {
    const db = openPostgres({ connectionString: url, poolSize: 2, statementTimeoutMs: 300 });
    after(() => db.close());
    // Cut by the server's timeout of the transaction (SET LOCAL), not by a cancel of the client's.
    await assert.rejects(
      db.transaction((tx) => tx.query('SELECT pg_sleep(3)')),
      {
        code: '57014',
        message: 'canceling statement due to statement timeout',
      },
    );
    const [inside] = await db.transaction((tx) =>
      tx.query<{ statement_timeout: string }>('SHOW statement_timeout'),
    );
    assert.equal(inside!.statement_timeout, '300ms');
    // Outside a transaction the server session keeps its own setting: SET LOCAL ended with COMMIT.
    const [outside] = await db.query<{ statement_timeout: string }>('SHOW statement_timeout');
    assert.equal(outside!.statement_timeout, '0');
  });

  for (const through of ['PgBouncer', 'a direct connection'] as const) {
    test(`a statement outside a transaction is cancelled on the server at the timeout (${through})`, async () => {
      const target = through === 'PgBouncer' ? url : scratch.url;
      const db = openPostgres({ connectionString: target, poolSize: 2, statementTimeoutMs: 300 });
      after(() => db.close());
      const marker = `sfa-cancel-${Date.now()}`;
      // The client's cancel request at the timeout ended it before the sleep did (no session setting
      // bounds a statement outside a transaction); a client that merely gave up fails otherwise.
      await assert.rejects(db.query(`SELECT pg_sleep(5), '${marker}'`), {
        code: '57014',
        message: 'canceling statement due to user request',
      });
      // Stopped on the server, not merely given up by the client. (An idle session still shows its
      // last query: only an active one is still running it.)
      const [running] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%${marker}%' AND pid <> pg_backend_pid()`,
      );
      assert.equal(running!.n, 0);
      const [ok] = await db.query<{ one: number }>('SELECT 1 AS one');
      assert.equal(ok!.one, 1);
    });
  }
});
