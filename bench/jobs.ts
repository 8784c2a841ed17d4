/**
 * Issue 25: bulk jobs, measured on the production build as `sfa-backoffice serve` runs it.
 *
 * - 1,000,000 prices and 1,000,000 customers as CSV on PostgreSQL, from the first PUT to `succeeded`,
 *   against a floor made in the same run on the same database: server-side COPY of the same file into
 *   a temporary table, then the batch statement's own INSERT ... ON CONFLICT (buildWriteSql, its
 *   unnest swapped for the table) from it. The customers' file is ten parts of 100 MiB (each row's
 *   address padded): the server's RSS growth while it takes and runs it is the memory figure.
 * - Tenant B's 1,000-item batches and GET /v1/customers?limit=100 while another tenant's 1,000,000-row
 *   job runs: of prices, then of customers (the 1 GiB file: its upload and check are the heaviest).
 * - The server SIGKILLed while a job writes, then started again: the job's counts against the
 *   uninterrupted run's, and every row once in the change feed.
 * - PGlite's time for the prices file beside PostgreSQL's.
 *
 * `npm run bench:jobs` (`-- --quick`: 100,000 rows, 10 MiB parts; `-- --jobs-only`: the first table's
 * jobs only; `-- --only=prices` or `customers`: that one's jobs (and tenant B beside it only); `-- --repeat=N`: each of them
 * N times, for a tenant of its own each). See bench/README.md.
 */
import { once } from 'node:events';
import { chmodSync, createReadStream, createWriteStream, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import type { BatchResource } from '../src/resources/batch-resource.js';
import { customers } from '../src/resources/customers.js';
import { prices } from '../src/resources/prices.js';
import { generateCustomers } from '../src/seed/generate.js';
import { buildWriteSql } from '../src/sql/batch-write.js';
import { type CpuSplit, cpuNow, cpuSpent } from './lib/cpu-time.js';
import {
  createPgDatabase,
  createRawTenant,
  insertRawProducts,
  postgresCommand,
  type RawClient,
  rawPostgres,
  tempDir,
} from './lib/databases.js';
import { Client } from './lib/load.js';
import { benchMain, describeMachine } from './lib/options.js';
import { type ChildServer, CLI, memoryOf, resetPeak, serverEnv, startServer } from './lib/server.js';
import { formatTable, mb, ms, percentile, ratio } from './lib/stats.js';
import { type CreatedTenant, createTenant, signIn } from './lib/tenant.js';
import { PRODUCT_COUNT, productCode, productItems } from './lib/workloads.js';

const QUICK = process.argv.includes('--quick');
const JOBS_ONLY = process.argv.includes('--jobs-only');
/** `--only=prices` or `--only=customers`: the first table's job of that resource only. */
const ONLY = /^--only=(\w+)$/.exec(process.argv.find((arg) => arg.startsWith('--only=')) ?? '')?.[1];
const REPEAT = Number(
  /^--repeat=(\d+)$/.exec(process.argv.find((arg) => arg.startsWith('--repeat=')) ?? '')?.[1] ?? 1,
);
const ROWS = QUICK ? 100_000 : 1_000_000;
const MIB = 1024 * 1024;
/** Parts of the customers' file: ten of them, of 100 MiB (10 MiB when quick). */
const PART_BYTES = (QUICK ? 10 : 100) * MIB;
const PARTS = 10;

// ---------------------------------------------------------------- files

/** Writes lines to a file, waiting for the stream as it fills. */
async function writeLines(path: string, lines: (write: (line: string) => Promise<void>) => Promise<void>) {
  const out = createWriteStream(path);
  await lines(async (line) => {
    if (!out.write(line)) await once(out, 'drain');
  });
  out.end();
  await once(out, 'finish');
}

const cell = (value: unknown) => {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** ROWS prices, keys all new: every product in every one of ROWS / PRODUCT_COUNT price lists. */
async function pricesFile(path: string): Promise<void> {
  await writeLines(path, async (write) => {
    await write('product_code,price_list,price,base_price\n');
    for (let n = 0; n < ROWS; n++) {
      await write(
        `${productCode(n % PRODUCT_COUNT)},L${Math.floor(n / PRODUCT_COUNT)},${(n % 9973) + 0.25},${(n % 9973) + 1}\n`,
      );
    }
  });
}

/**
 * ROWS customers of the seeded data set, padded (address, then observations) so that the file is
 * PARTS * PART_BYTES long, within a few bytes a row: about 1 KiB a row.
 */
async function customersFile(path: string): Promise<void> {
  const names = customers.fieldNames;
  const sample = generateCustomers({ seed: 25, from: 0, count: 1_000 });
  const plain =
    sample.reduce((sum, item) => sum + names.map((name) => cell(item[name])).join(',').length + 1, 0) / 1_000;
  // 1 % under ten parts: the first rows sampled are a little shorter than the average.
  let pad = Math.max(0, Math.floor((PARTS * PART_BYTES * 0.99) / ROWS - plain));
  const padded = (value: unknown, max: number) => {
    const text = String(value ?? '');
    const room = Math.min(pad, Math.max(0, max - text.length - 1));
    return room > 0 ? `${text} ${'x'.repeat(room - 1)}` : text;
  };
  const extra = (item: Record<string, unknown>): Record<string, unknown> => {
    const before = pad;
    const address = padded(item.address, 300);
    pad -= address.length - String(item.address ?? '').length;
    const observations = padded(item.observations, 500);
    pad = before;
    return { ...item, address, observations };
  };
  await writeLines(path, async (write) => {
    await write(`${names.join(',')}\n`);
    for (let from = 0; from < ROWS; from += 10_000) {
      const items = generateCustomers({ seed: 25, from, count: Math.min(10_000, ROWS - from) });
      let text = '';
      for (const item of items) {
        const wide = extra(item);
        text += `${names.map((name) => cell(wide[name])).join(',')}\n`;
      }
      await write(text);
    }
  });
}

// ---------------------------------------------------------------- the floor

/**
 * The floor: COPY of the file into a temporary table shaped like the write statement's unnest, then
 * that very statement reading the table. Seconds, and the rows it created. With `blockRows`, the
 * statement runs once per that many rows of the table, each in its own transaction, as a job must
 * (extensions.md 12: at most 10,000 rows a transaction): the floor of the spec's own bound.
 */
async function floor(
  raw: RawClient,
  resource: BatchResource,
  file: string,
  tenant: number,
  blockRows?: number,
) {
  const sql = buildWriteSql(resource);
  const from = /FROM unnest\(([^)]*)\) AS i\(([^)]*)\)/.exec(sql);
  if (!from) throw new Error(`no unnest in the ${resource.name} statement`);
  const types = from[1]!.split(', ').map((param) => param.replace(/^\$\d+::/, '').replace(/\[\]$/, ''));
  const columns = from[2]!.split(', ');
  await raw.query('DROP TABLE IF EXISTS bench_copy');
  await raw.query(
    `CREATE TEMP TABLE bench_copy (${columns.map((c, at) => `${c} ${types[at]}`).join(', ')}${blockRows ? ', bench_n bigserial' : ''})`,
  );
  const header = (await firstLine(file)).split(',').map((name) => JSON.stringify(name));
  const started = performance.now();
  await raw.query(`COPY bench_copy (${header.join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER true)`);
  let created = 0;
  // Finding each block's rows is the floor's own need: its index and count are not timed.
  let untimed = 0;
  if (blockRows) {
    const indexed = performance.now();
    await raw.query('CREATE INDEX ON bench_copy (bench_n)');
    const [{ rows }] = (await raw.query<{ rows: number }>(
      'SELECT count(*)::int AS rows FROM bench_copy',
    )) as [{ rows: number }];
    untimed = performance.now() - indexed;
    const block = sql.replace(
      from[0],
      `FROM (SELECT * FROM bench_copy WHERE bench_n > $2 AND bench_n <= $3) AS i`,
    );
    for (let after = 0; after < rows; after += blockRows) {
      const [written] = await raw.query<{ created: number }>(block, [tenant, after, after + blockRows]);
      created += written!.created;
    }
  } else {
    const [written] = await raw.query<{ created: number }>(sql.replace(from[0], 'FROM bench_copy AS i'), [
      tenant,
    ]);
    created = written!.created;
  }
  const seconds = (performance.now() - started - untimed) / 1000;
  await raw.query('DROP TABLE bench_copy');
  return { seconds, created };
}

async function firstLine(file: string): Promise<string> {
  const stream = createReadStream(file, { start: 0, end: 64 * 1024, encoding: 'utf8' });
  let text = '';
  for await (const chunk of stream) {
    text += chunk;
    if (text.includes('\n')) break;
  }
  stream.destroy();
  return text.slice(0, text.indexOf('\n'));
}

// ---------------------------------------------------------------- the service

interface Service {
  server: ChildServer;
  client: Client;
  env: NodeJS.ProcessEnv;
}

async function json(service: Service, method: 'GET' | 'POST', path: string, headers: object, body?: unknown) {
  const answer = await service.client.request(
    method,
    path,
    { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } as Record<
      string,
      string
    >,
    body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(body)),
  );
  const text = answer.body.toString('utf8');
  return { status: answer.status, body: text ? JSON.parse(text) : undefined };
}

/** PUT bytes [start, end) of the file as one part, streamed from disk. */
function putPart(
  base: string,
  headers: object,
  id: string,
  part: number,
  file: string,
  start: number,
  end: number,
) {
  const url = new URL(`${base}/v1/jobs/${id}/parts/${part}`);
  return new Promise<void>((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: url.pathname,
        headers: { ...headers, 'content-type': 'text/csv', 'content-length': String(end - start) },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve()
            : reject(new Error(`part ${part}: ${response.statusCode} ${text}`)),
        );
      },
    );
    request.on('error', reject);
    createReadStream(file, { start, end: end - 1 }).pipe(request);
  });
}

interface JobRun {
  id: string;
  seconds: number;
  rows: Record<string, number>;
  /** Peak RSS growth over the RSS before the first PUT, kB. */
  growthKb: number;
  /** Seconds of each phase, as polled: the upload (first PUT to complete), the check, the writing. */
  phases: { upload: number; check: number; write: number };
  /**
   * CPU each phase took, by process (the same process throughout; undefined off Linux or after a
   * kill): a phase whose server CPU is near its seconds is bound by the server's one JavaScript thread.
   */
  cpu: { upload: CpuSplit; check: CpuSplit; write: CpuSplit } | undefined;
}

/** A job of the file, from its first PUT to its end, polled every 100 ms; `onPoll` sees each poll. */
async function runJob(
  current: () => Service,
  headers: object,
  resource: string,
  file: string,
  partBytes: number,
  onPoll: (job: { state: string; rows: Record<string, number> }) => Promise<void> | void = () => {},
): Promise<JobRun> {
  const service = current();
  const created = await json(service, 'POST', '/v1/jobs', headers, { resource, format: 'csv' });
  if (created.status !== 201) throw new Error(`job: ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  const size = statSync(file).size;
  const before = memoryOf(service.server.pid).rssKb;
  resetPeak(service.server.pid);
  const cpuAt = [cpuNow(service.server.pid)];
  const started = performance.now();
  for (let part = 1, at = 0; at < size; part++, at += partBytes) {
    await putPart(service.server.baseUrl, headers, id, part, file, at, Math.min(size, at + partBytes));
  }
  const done = await json(service, 'POST', `/v1/jobs/${id}/complete`, headers);
  if (done.status !== 202) throw new Error(`complete: ${JSON.stringify(done.body)}`);
  const uploaded = performance.now();
  cpuAt.push(cpuNow(service.server.pid));
  let writing = Number.NaN;
  for (;;) {
    const job = (await json(current(), 'GET', `/v1/jobs/${id}`, headers)).body;
    if (Number.isNaN(writing) && !['queued', 'validating'].includes(job.state)) {
      writing = performance.now();
      cpuAt.push(cpuNow(service.server.pid));
    }
    await onPoll(job);
    if (!['queued', 'validating', 'writing'].includes(job.state)) {
      if (job.state !== 'succeeded') throw new Error(`job ${id} ${job.state}: ${job.error}`);
      const seconds = (performance.now() - started) / 1000;
      // The same process, unless it was killed and started again (no figure then).
      const same = current() === service;
      cpuAt.push(cpuNow(service.server.pid));
      const [upload, check, write] = [0, 1, 2].map((at) => cpuSpent(cpuAt[at], cpuAt[at + 1]));
      return {
        id,
        seconds,
        rows: job.rows,
        growthKb: same ? memoryOf(service.server.pid).peakKb - before : Number.NaN,
        phases: {
          upload: (uploaded - started) / 1000,
          check: (writing - uploaded) / 1000,
          write: (performance.now() - writing) / 1000,
        },
        cpu: same && upload && check && write ? { upload, check, write } : undefined,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startService(env: NodeJS.ProcessEnv): Promise<Service> {
  const server = await startServer(env, process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []);
  return { server, client: new Client(server.baseUrl, 8), env };
}

async function tenantOf(service: Service, created: CreatedTenant) {
  const { headers } = await signIn(service.server.baseUrl, created);
  const loaded = await json(service, 'POST', '/api/products/batch-create', headers, productItems());
  if (loaded.status !== 201) throw new Error(`products: ${JSON.stringify(loaded.body)}`);
  return headers;
}

/** Each phase's seconds and, when measured, the CPU seconds the server and PostgreSQL spent in it. */
const phasesOf = (job: JobRun) =>
  (['upload', 'check', 'write'] as const)
    .map((phase) => {
      const cpu = job.cpu?.[phase];
      const split = cpu
        ? ` (CPU: server ${(cpu.server / 1000).toFixed(1)}, PostgreSQL ${(cpu.postgres / 1000).toFixed(1)})`
        : '';
      return `${phase} ${job.phases[phase].toFixed(1)} s${split}`;
    })
    .join(', ');

/** The columns of the table of jobs. */
const COLUMNS = [
  'job',
  'service (first PUT to succeeded)',
  'floor (COPY + the statement)',
  'ratio',
  'floor in transactions of 10,000 rows: ratio',
  'RSS growth',
  'phases',
];

const perSecond = (rows: number, seconds: number) =>
  `${Math.round(rows / seconds).toLocaleString('en-US')} rows/s`;

/** Issue 42's bars: the whole job against the floor's COPY and one statement. */
const RATIO_BARS: Record<string, number> = { prices: 1.8, customers: 2.0 };

// ---------------------------------------------------------------- runs

async function main(): Promise<void> {
  console.log(
    `jobs benchmark ${new Date().toISOString()}${QUICK ? ' (quick)' : ''}: ${await describeMachine(true)}`,
  );
  const dir = tempDir('sfa-bench-jobs-');
  // The floor's COPY is read by the PostgreSQL server's own user.
  chmodSync(dir, 0o755);
  const pricesCsv = join(dir, 'prices.csv');
  const customersCsv = join(dir, 'customers.csv');
  await pricesFile(pricesCsv);
  await customersFile(customersCsv);
  console.log(
    `files: prices ${(statSync(pricesCsv).size / MIB).toFixed(0)} MiB, customers ${(statSync(customersCsv).size / MIB).toFixed(0)} MiB (${ROWS.toLocaleString('en-US')} rows each)`,
  );

  // PostgreSQL: tenants made before the server starts, as an operator would.
  const url = await createPgDatabase();
  const env = { ...serverEnv(), DATABASE_URL: url, JOB_LEASE_SECONDS: '5' };
  const [a, b, c, d, k] = [
    await createTenant(env, CLI, 'jobs-a'),
    await createTenant(env, CLI, 'jobs-b'),
    await createTenant(env, CLI, 'jobs-c'),
    await createTenant(env, CLI, 'jobs-d'),
    await createTenant(env, CLI, 'jobs-k'),
  ];
  let service = await startService(env);
  const headersA = await tenantOf(service, a);
  const raw = await rawPostgres(url);
  const rawTenant = await createRawTenant(raw);
  await insertRawProducts(
    raw,
    rawTenant,
    Array.from({ length: PRODUCT_COUNT }, (_, at) => productCode(at)),
  );
  const table: string[][] = [];

  for (const [resource, file, partBytes] of [
    [prices, pricesCsv, PART_BYTES],
    [customers, customersCsv, PART_BYTES],
  ] as const) {
    if (ONLY !== undefined && resource.name !== ONLY) continue;
    const floors = [];
    for (const blockRows of [undefined, 10_000]) {
      const made = await floor(raw, resource, file, rawTenant, blockRows);
      if (made.created !== ROWS) throw new Error(`floor ${resource.name}: ${made.created} created`);
      await raw.query(`DELETE FROM ${resource.table} WHERE tenant_id = $1`, [rawTenant]);
      await postgresCommand(url, `VACUUM ANALYZE ${resource.table}`);
      floors.push(made.seconds);
    }
    const [raw1, blocks] = floors as [number, number];
    for (let run = 0; run < REPEAT; run++) {
      const headers =
        run === 0
          ? headersA
          : await tenantOf(service, await createTenant(env, CLI, `jobs-a${run}-${resource.name}`));
      const job = await runJob(() => service, headers, resource.name, file, partBytes);
      if (job.rows.created !== ROWS) throw new Error(`job ${resource.name}: ${JSON.stringify(job.rows)}`);
      table.push([
        `${resource.name} ${ROWS.toLocaleString('en-US')}, PostgreSQL`,
        `${job.seconds.toFixed(1)} s (${perSecond(ROWS, job.seconds)})`,
        `${raw1.toFixed(1)} s (${perSecond(ROWS, raw1)})`,
        `${ratio(job.seconds / raw1)} (bar ${RATIO_BARS[resource.name]}x)`,
        `${blocks.toFixed(1)} s: ${ratio(job.seconds / blocks)}`,
        mb(job.growthKb),
        phasesOf(job),
      ]);
    }
  }
  if (JOBS_ONLY) {
    await service.server.stop();
    console.log(`\n${formatTable(COLUMNS, table, 1)}`);
    return;
  }

  // Tenant B's batches and reads while tenant C's job of ROWS prices, then of ROWS customers runs.
  const headersB = await tenantOf(service, b);
  const loadedB = await json(
    service,
    'POST',
    '/api/customers/batch-create',
    headersB,
    generateCustomers({ seed: 3, from: 0, count: 1_000 }),
  );
  if (loadedB.status !== 201) throw new Error(`B customers: ${JSON.stringify(loadedB.body)}`);
  const besides: string[] = [];
  let round = 0;
  for (const [resource, file, tenant] of [
    [prices, pricesCsv, c],
    [customers, customersCsv, d],
  ] as const) {
    if (ONLY !== undefined && resource.name !== ONLY) continue;
    const headersC = await tenantOf(service, tenant);
    const batchMs: number[] = [];
    const readMs: number[] = [];
    let running = true;
    const loopB = (async () => {
      while (running) {
        round++;
        const items = Array.from({ length: 1_000 }, (_, at) => ({
          product_code: productCode(at),
          price_list: `B${round}`,
          price: `${round}.${String(at % 100).padStart(2, '0')}`,
        }));
        let started = performance.now();
        const posted = await json(service, 'POST', prices.path, headersB, items);
        batchMs.push(performance.now() - started);
        if (posted.status !== 201)
          throw new Error(`B batch: ${posted.status} ${JSON.stringify(posted.body)}`);
        started = performance.now();
        const read = await json(service, 'GET', '/v1/customers?limit=100', headersB);
        readMs.push(performance.now() - started);
        if (read.status !== 200) throw new Error(`B read: ${read.status}`);
      }
    })();
    const busy = await runJob(() => service, headersC, resource.name, file, PART_BYTES);
    running = false;
    await loopB;
    table.push([
      `${resource.name} ${ROWS.toLocaleString('en-US')} beside tenant B`,
      `${busy.seconds.toFixed(1)} s`,
      '',
      '',
      '',
      '',
      phasesOf(busy),
    ]);
    besides.push(
      `tenant B beside the ${resource.name} job: ${batchMs.length} batches of 1,000 prices p50 ${ms(percentile(batchMs, 50))} p99 ${ms(percentile(batchMs, 99))} ms (bar 150); ` +
        `${readMs.length} GET /v1/customers?limit=100 p50 ${ms(percentile(readMs, 50))} p99 ${ms(percentile(readMs, 99))} ms (bar 50)`,
    );
  }

  // SIGKILL while writing, then the service started again.
  const headersK = await tenantOf(service, k);
  let killedAt = -1;
  const killed = await runJob(
    () => service,
    headersK,
    'prices',
    pricesCsv,
    PART_BYTES,
    async (job) => {
      if (killedAt >= 0 || job.state !== 'writing' || job.rows.created === 0) return;
      killedAt = job.rows.created ?? 0;
      process.kill(service.server.pid, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 200));
      service = await startService(env);
    },
  );
  const { received, invalid, created, updated, ignored } = killed.rows;
  if (received !== ROWS || invalid !== 0 || created !== ROWS || updated !== 0 || ignored !== 0) {
    throw new Error(`killed job's counts: ${JSON.stringify(killed.rows)}`);
  }
  // Statistics as autovacuum would leave them after millions of rows (it is off on the benchmark's
  // machine): planned on those of an emptier table, each feed page took over a second.
  await postgresCommand(url, 'ANALYZE prices');
  const feed = { rows: 0, keys: new Set<string>() };
  for (let path = '/v1/changes?resource=prices&limit=1000'; ; ) {
    const page = (await json(service, 'GET', path, headersK)).body;
    for (const row of page.data) {
      feed.rows++;
      feed.keys.add(`${row.product_code}/${row.price_list}`);
    }
    if (page.data.length < 1000) break;
    path = `/v1/changes?resource=prices&limit=1000&after=${page.next}`;
  }
  table.push([
    `prices ${ROWS.toLocaleString('en-US')}, SIGKILLed at ${killedAt.toLocaleString('en-US')} written`,
    `${killed.seconds.toFixed(1)} s`,
    '',
    `counts ${JSON.stringify(killed.rows)}; feed ${feed.rows.toLocaleString('en-US')} rows, ${feed.keys.size.toLocaleString('en-US')} keys`,
    '',
    '',
    '',
  ]);
  await service.server.stop();

  // PGlite: the prices file.
  const pgliteEnv = { ...serverEnv(), DATA_DIR: join(tempDir('sfa-bench-jobs-pglite-'), 'data') };
  const p = await createTenant(pgliteEnv, CLI, 'jobs-p');
  const embedded = await startService(pgliteEnv);
  const headersP = await tenantOf(embedded, p);
  const pglite = await runJob(() => embedded, headersP, 'prices', pricesCsv, PART_BYTES);
  table.push([
    `prices ${ROWS.toLocaleString('en-US')}, PGlite`,
    `${pglite.seconds.toFixed(1)} s (${perSecond(ROWS, pglite.seconds)})`,
    '',
    `${ratio(pglite.seconds / Number.parseFloat(table[0]![1]!))} of PostgreSQL's time`,
    '',
    mb(pglite.growthKb),
    phasesOf(pglite),
  ]);
  await embedded.server.stop();

  console.log(`\n${formatTable(COLUMNS, table, 1)}`);
  console.log(`\n${besides.join('\n')}`);
}

await benchMain(main);
