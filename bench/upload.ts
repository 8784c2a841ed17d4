/**
 * Issue 39: the upload command (extensions.md 15), measured on the production build against
 * `sfa-backoffice serve` on PostgreSQL.
 *
 * - 1,000,000 prices and 1,000,000 customers as CSV: `sfa-backoffice upload FILE --resource R` from
 *   its start to its exit, against the same job driven by raw HTTP calls in this process (the parts
 *   streamed from disk, `complete`, the job polled every 100 ms). Bar: the command adds at most 5 %.
 *   Each job runs on a fresh database of its own with a server of its own (the products loaded, the
 *   table to write empty): a job that runs second into a table the first one filled pays for its
 *   bigger indexes and the autovacuum after the load, which is not the command's cost. What is left of
 *   the order (the machine's load drifting) is shown by alternating it: prices raw first, customers the
 *   command first, and each further round (`--rounds N`) the other way round.
 * - The command's RSS (VmRSS of its process, sampled every 50 ms from /proc) while it sends a 784 MiB
 *   file (eight parts of 100 MiB, --no-wait; the job is aborted once queued). Bar: 100 MB.
 *
 * `npm run bench:upload` (`-- --quick`: 100,000 rows and a 104 MiB file; `-- --only customers`: one
 * resource and no 784 MiB file). See bench/README.md.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { scratchPostgresDatabase } from '../kit/scratch-database.js';
import { cliLaunch } from '../kit/server-process.js';
import { customers } from '../src/resources/customers.js';
import { generateCustomers } from '../src/seed/generate.js';
import { onCleanup } from './lib/cleanup.js';
import { PG_ADMIN_URL, tempDir } from './lib/databases.js';
import { benchMain, describeMachine } from './lib/options.js';
import { type ChildServer, CLI, memoryOf, serverEnv, startServer } from './lib/server.js';
import { formatTable } from './lib/stats.js';
import { type CreatedTenant, createTenant, signIn } from './lib/tenant.js';
import { PRODUCT_COUNT, productCode, productItems } from './lib/workloads.js';

const QUICK = process.argv.includes('--quick');
const argAfter = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const ROUNDS = Number(argAfter('--rounds') ?? 1);
const ONLY = argAfter('--only');
const ROWS = QUICK ? 100_000 : 1_000_000;
const MIB = 1024 * 1024;
const PART_BYTES = 100 * MIB;
const BIG_BYTES = (QUICK ? 104 : 784) * MIB;

async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  const out = createWriteStream(path);
  for (const line of lines) if (!out.write(line)) await once(out, 'drain');
  out.end();
  await once(out, 'close');
}

function* pricesRows(): Iterable<string> {
  yield 'product_code,price_list,price,base_price\n';
  for (let n = 0; n < ROWS; n++) {
    yield `${productCode(n % PRODUCT_COUNT)},L${Math.floor(n / PRODUCT_COUNT)},${(n % 9973) + 0.25},${(n % 9973) + 1}\n`;
  }
}

const cell = (value: unknown) => {
  const text = value === undefined || value === null ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

function* customersRows(): Iterable<string> {
  const names = customers.fieldNames;
  yield `${names.join(',')}\n`;
  for (let from = 0; from < ROWS; from += 10_000) {
    for (const item of generateCustomers({ seed: 39, from, count: Math.min(10_000, ROWS - from) })) {
      yield `${names.map((name) => cell(item[name])).join(',')}\n`;
    }
  }
}

/** Products rows with long descriptions up to `bytes`: a file to send, never run. */
function* bigRows(bytes: number): Iterable<string> {
  yield 'code,description,unit,tax\n';
  let size = 0;
  for (let n = 0; size < bytes; n++) {
    const line = `BIG-${n},${'d'.repeat(1000)},box,19\n`;
    size += line.length;
    yield line;
  }
}

interface Tenant {
  created: CreatedTenant;
  headers: Record<string, string>;
}

async function request(base: string, headers: object, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } as Record<
      string,
      string
    >,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

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
    const req = http.request(
      url,
      {
        method: 'PUT',
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
    req.on('error', reject);
    createReadStream(file, { start, end: end - 1 }).pipe(req);
  });
}

/** The job driven by raw HTTP calls: seconds from the first request to `succeeded`. */
async function rawJob(base: string, tenant: Tenant, resource: string, file: string): Promise<number> {
  const started = performance.now();
  const created = await request(base, tenant.headers, 'POST', '/v1/jobs', { resource, format: 'csv' });
  if (created.status !== 201) throw new Error(`job: ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  const size = statSync(file).size;
  for (let part = 1, at = 0; at < size; part++, at += PART_BYTES) {
    await putPart(base, tenant.headers, id, part, file, at, Math.min(size, at + PART_BYTES));
  }
  const done = await request(base, tenant.headers, 'POST', `/v1/jobs/${id}/complete`);
  if (done.status !== 202) throw new Error(`complete: ${JSON.stringify(done.body)}`);
  for (;;) {
    const job = (await request(base, tenant.headers, 'GET', `/v1/jobs/${id}`)).body;
    if (job.state === 'succeeded' && job.rows.created === ROWS) return (performance.now() - started) / 1000;
    if (['failed', 'aborted', 'succeeded'].includes(job.state))
      throw new Error(`raw job ${job.state}: ${job.error}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The command as an integrator runs it, sampled for RSS every 50 ms: seconds and peak VmRSS kB. */
async function command(args: string[], credentials: string, base: string) {
  const launch = cliLaunch();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...launch.nodeOptions, CLI, ...args, '--credentials', credentials, '--url', base],
    {
      env: { ...process.env, ...launch.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let stdout = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  let peakKb = 0;
  const sampler = setInterval(() => {
    try {
      peakKb = Math.max(peakKb, memoryOf(child.pid!).rssKb);
    } catch {
      // ended
    }
  }, 50);
  const [code] = (await once(child, 'exit')) as [number];
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`upload exited ${code}: ${stdout}`);
  return { seconds, peakKb, stdout };
}

/** A server on a fresh database with one tenant that holds the products: one job's starting state. */
interface Fresh {
  server: ChildServer;
  tenant: Tenant;
  credentials: string;
  close(): Promise<void>;
}

async function fresh(dir: string, name: string): Promise<Fresh> {
  const scratch = await scratchPostgresDatabase(PG_ADMIN_URL, {
    prefix: 'sfa_bench',
    retryWhileRestarting: true,
  });
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await scratch.drop();
  };
  onCleanup(`drop database ${scratch.name}`, drop);
  const env = { ...serverEnv(), DATABASE_URL: scratch.url };
  const created = await createTenant(env, CLI, name);
  const server = await startServer(env);
  const { headers } = await signIn(server.baseUrl, created);
  const loaded = await request(server.baseUrl, headers, 'POST', '/api/products/batch-create', productItems());
  if (loaded.status !== 201) throw new Error(`products: ${JSON.stringify(loaded.body)}`);
  const credentials = join(dir, `credentials-${name}.json`);
  writeFileSync(credentials, JSON.stringify(created));
  return {
    server,
    tenant: { created, headers: headers as Record<string, string> },
    credentials,
    async close() {
      await server.stop();
      await drop();
    },
  };
}

type Side = 'raw' | 'cmd';

/** One job of one side on a fresh database: seconds, and the command's peak RSS (0 for raw). */
async function measure(dir: string, side: Side, resource: string, file: string) {
  const service = await fresh(dir, `${side}-${resource}`);
  try {
    if (side === 'raw') {
      return { seconds: await rawJob(service.server.baseUrl, service.tenant, resource, file), peakKb: 0 };
    }
    const cmd = await command(
      ['upload', file, '--resource', resource],
      service.credentials,
      service.server.baseUrl,
    );
    if (!cmd.stdout.includes(`${ROWS} rows: ${ROWS} created`)) throw new Error(`upload: ${cmd.stdout}`);
    return cmd;
  } finally {
    await service.close();
  }
}

async function main(): Promise<void> {
  console.log(
    `upload benchmark ${new Date().toISOString()}${QUICK ? ' (quick)' : ''}: ${await describeMachine(true)}`,
  );
  const dir = tempDir('sfa-bench-upload-');
  const files = {
    prices: join(dir, 'prices.csv'),
    customers: join(dir, 'customers.csv'),
    big: join(dir, 'big.csv'),
  };
  const resources = (['prices', 'customers'] as const).filter((r) => ONLY === undefined || r === ONLY);
  if (resources.length === 0) throw new Error(`--only: prices or customers, not ${ONLY}`);
  if (resources.includes('prices')) await writeLines(files.prices, pricesRows());
  if (resources.includes('customers')) await writeLines(files.customers, customersRows());
  if (ONLY === undefined) await writeLines(files.big, bigRows(BIG_BYTES));
  const sizes = Object.entries(files)
    .filter(([name]) => name !== 'big' || ONLY === undefined)
    .filter(([name]) => name === 'big' || resources.includes(name as 'prices'))
    .map(([name, file]) => `${name} ${(statSync(file).size / MIB).toFixed(0)} MiB`);
  console.log(`files: ${sizes.join(', ')}`);

  const table: string[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [at, resource] of resources.entries()) {
      const rawFirst = (at + round) % 2 === 0;
      const order: Side[] = rawFirst ? ['raw', 'cmd'] : ['cmd', 'raw'];
      const took: Partial<Record<Side, { seconds: number; peakKb: number }>> = {};
      for (const side of order) {
        took[side] = await measure(dir, side, resource, files[resource]);
        console.log(
          `  ${resource} ${side}: ${took[side]!.seconds.toFixed(1)} s (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
      const raw = took.raw!.seconds;
      const cmd = took.cmd!.seconds;
      table.push([
        `${ROWS.toLocaleString('en-US')} ${resource}`,
        rawFirst ? 'raw first' : 'command first',
        `${raw.toFixed(1)} s`,
        `${cmd.toFixed(1)} s`,
        `${(((cmd - raw) / raw) * 100).toFixed(1)} % (bar 5 %)`,
        `${(took.cmd!.peakKb / 1024).toFixed(0)} MB`,
      ]);
      console.log(table.at(-1)!.join(' | '));
    }
  }

  if (ONLY === undefined) {
    const service = await fresh(dir, 'big');
    const big = await command(
      ['upload', files.big, '--resource', 'products', '--no-wait'],
      service.credentials,
      service.server.baseUrl,
    );
    const id = big.stdout.trim().split('\n').at(-1)!;
    await request(service.server.baseUrl, service.tenant.headers, 'POST', `/v1/jobs/${id}/abort`);
    await service.close();
    table.push([
      `send ${(BIG_BYTES / MIB).toFixed(0)} MiB (--no-wait)`,
      '',
      '',
      `${big.seconds.toFixed(1)} s`,
      '',
      `${(big.peakKb / 1024).toFixed(0)} MB (bar 100 MB)`,
    ]);
  }
  console.log(
    formatTable(
      ['job', 'order', 'raw HTTP', 'the command', 'the command adds', "the command's peak RSS"],
      table,
    ),
  );
}

await benchMain(main);
