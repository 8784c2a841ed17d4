import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { listResources } from '../../src/resources/lists.js';
import { listPageSql, listPageStatement } from '../../src/sql/list-page.js';
import {
  createPgDatabase,
  postgresCommand,
  type RawClient,
  rawPgliteAt,
  rawPostgresPool,
  tempDir,
  tenantId,
} from './databases.js';
import { Client, combine, type LoadOptions, type LoadResult, runLoad, summary } from './load.js';
import { type ChildServer, CLI, serverEnv, startServer } from './server.js';
import { ms, ratio } from './stats.js';
import { type CreatedTenant, createTenant, type ServiceTenant, signIn } from './tenant.js';

export type Backend = 'postgres' | 'pglite';

/**
 * The read benchmark's pieces: a server with seeded tenants, the same statements sent raw, and the
 * measurement of one page request on both sides.
 */

export interface TenantPlan {
  customers: number;
  deliveries: number;
  itemsPerDelivery: number;
}

export interface ReadTenant extends ServiceTenant {
  id: number;
  plan: TenantPlan;
}

export interface ReadSetup {
  backend: Backend;
  server: ChildServer;
  client: Client;
  raw: RawClient;
  tenants: Record<string, ReadTenant>;
  /** PostgreSQL: the database URL (for EXPLAIN); PGlite: undefined. */
  url: string | undefined;
  /** Seconds each tenant took to seed, by tenant key. */
  seedSeconds: Record<string, number>;
}

/** `sfa-backoffice seed` as a child process, its progress lines passed through. Returns seconds taken. */
export async function seedWithCli(env: NodeJS.ProcessEnv, tenant: string, plan: TenantPlan): Promise<number> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      CLI,
      'seed',
      '--tenant',
      tenant,
      '--customers',
      String(plan.customers),
      '--deliveries',
      String(plan.deliveries),
      '--items-per-delivery',
      String(plan.itemsPerDelivery),
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  let output = '';
  const pass = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-2000);
    for (const line of chunk.toString().split('\n')) if (line.trim()) console.log(`    [${line.trim()}]`);
  };
  child.stdout!.on('data', pass);
  child.stderr!.on('data', pass);
  const [code] = (await once(child, 'exit')) as [number | null];
  process.removeListener('exit', kill);
  if (code !== 0) throw new Error(`seed exited with ${code}: ${output}`);
  return (performance.now() - started) / 1000;
}

/**
 * A server of the production build on a fresh database (PostgreSQL: a new database; PGlite: a new
 * DATA_DIR) holding one tenant per plan, seeded with the command line, vacuumed and analysed; and
 * the raw side: a pg pool of `concurrency` connections on the same database, or (PGlite) an
 * in-process PGlite on a copy of the seeded directory, so both sides read the same rows.
 */
export async function prepareReads(
  backend: Backend,
  plans: Record<string, TenantPlan>,
  concurrency: number,
): Promise<ReadSetup> {
  const env = serverEnv();
  let url: string | undefined;
  if (backend === 'postgres') {
    url = await createPgDatabase();
    env.DATABASE_URL = url;
  } else {
    env.DATA_DIR = tempDir('sfa-bench-read-pglite-');
  }
  const created: Record<string, CreatedTenant> = {};
  const seedSeconds: Record<string, number> = {};
  for (const [key, plan] of Object.entries(plans)) {
    created[key] = await createTenant(env, CLI, `bench-${key}`);
    console.log(
      `  ${backend}: seeding tenant ${key}: ${plan.customers} customers, ${plan.deliveries} deliveries x ${plan.itemsPerDelivery} items`,
    );
    seedSeconds[key] = await seedWithCli(env, created[key].tenant, plan);
  }
  // Steady state: planner statistics and the visibility map as autovacuum would leave them (PGlite
  // has no autovacuum: there the statistics exist only because of this step).
  const vacuum = 'VACUUM (ANALYZE) customers, deliveries, delivery_items';
  const vacuumStarted = performance.now();
  let rawDir: string | undefined;
  if (url) {
    await postgresCommand(url, vacuum);
  } else {
    const db = await PGlite.create(env.DATA_DIR!);
    await db.exec(vacuum);
    await db.close();
    rawDir = tempDir('sfa-bench-read-raw-pglite-');
    // The seed command has exited and released the directory; the copy is the floor's alone.
    cpSync(env.DATA_DIR!, rawDir, { recursive: true });
  }
  console.log(`  ${backend}: VACUUM (ANALYZE) ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s`);

  // BENCH_CPU_PROF=<dir>: the server writes a CPU profile there when it exits.
  const profile = process.env.BENCH_CPU_PROF;
  const server = await startServer(env, profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []);
  const raw = url ? await rawPostgresPool(url, concurrency) : await rawPgliteAt(rawDir!);
  const tenants: Record<string, ReadTenant> = {};
  for (const [key, plan] of Object.entries(plans)) {
    const signed = await signIn(server.baseUrl, created[key]!);
    tenants[key] = { ...signed, id: await tenantId(raw, signed.name), plan };
  }
  return { backend, server, client: new Client(server.baseUrl, concurrency), raw, tenants, url, seedSeconds };
}

export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * The floor of a page request: the statement the service sends for it, built by the service's own SQL
 * builder (listPageSql of the list the path names) with the request's tenant and limit, page 1, the
 * list's own sort, no filters. That it reads the same page as the service is checked byte for byte
 * against the service's answer before timing (measureRead).
 */
export function readStatement(path: string, tenant: number): Statement {
  const url = new URL(path, 'http://bench');
  const list = listResources.find((candidate) => candidate.path === url.pathname);
  if (!list) throw new Error(`no list at ${url.pathname}`);
  const extra = [...url.searchParams.keys()].filter((name) => name !== 'limit');
  if (extra.length > 0) throw new Error(`${path}: the floor builds page 1 of the unfiltered list only`);
  return listPageSql(listPageStatement(list), {
    tenantId: tenant,
    filters: {},
    sortField: list.sort.field,
    descending: list.sort.default === 'descending',
    page: 1,
    limit: Number(url.searchParams.get('limit') ?? list.limit.default),
  });
}

export interface ReadWorkload {
  label: string;
  /** Path and query string, e.g. /v1/customers?limit=100. */
  path: string;
  tenant: string;
  /** meta.totalItems and the page's item count the answer must show. */
  total: number;
  items: number;
}

export interface ReadResult {
  workload: ReadWorkload;
  backend: Backend;
  service: LoadResult;
  raw: LoadResult;
  /** Bytes of one service answer and of the raw page text. */
  serviceBytes: number;
  rawBytes: number;
}

interface PageRow {
  total: number;
  item_count: number;
  data: string;
}

/**
 * One page request measured on both sides: the service over HTTP (keep-alive, `concurrency` sockets)
 * and the captured statement on the raw client. First both answers are checked to carry the same page
 * (the service's "data" is byte for byte the raw statement's text) and the expected counts; then both
 * warm up, and the timed requests run in blocks, the sides alternating (READ_BLOCKS blocks each).
 */
export async function measureRead(
  setup: ReadSetup,
  workload: ReadWorkload,
  options: LoadOptions,
): Promise<ReadResult> {
  const tenant = setup.tenants[workload.tenant]!;
  const statement = readStatement(workload.path, tenant.id);

  const first = await setup.client.request('GET', workload.path, tenant.headers);
  const [row] = await setup.raw.query<PageRow>(statement.sql, statement.params);
  if (first.status !== 200)
    throw new Error(`${workload.label}: HTTP ${first.status} ${first.body.toString().slice(0, 300)}`);
  const body = first.body.toString();
  const parsed = JSON.parse(body) as { data: unknown[]; meta: { totalItems: number; itemCount: number } };
  if (parsed.meta.totalItems !== workload.total || parsed.data.length !== workload.items) {
    throw new Error(
      `${workload.label}: expected ${workload.total} total, ${workload.items} items; got ${JSON.stringify(parsed.meta)}`,
    );
  }
  if (!row || row.total !== workload.total || row.item_count !== workload.items) {
    throw new Error(`${workload.label}: raw statement gave ${JSON.stringify({ ...row, data: undefined })}`);
  }
  if (!body.startsWith(`{"data":${row.data},"meta":`)) {
    throw new Error(`${workload.label}: the service's page differs from the raw statement's`);
  }
  const serviceBytes = first.body.byteLength;
  const rawBytes = Buffer.byteLength(row.data);

  const serviceCall = async () => {
    const answer = await setup.client.request('GET', workload.path, tenant.headers);
    if (answer.status !== 200 || answer.body.byteLength !== serviceBytes) {
      throw new Error(`${workload.label}: HTTP ${answer.status}, ${answer.body.byteLength} bytes`);
    }
  };
  const rawCall = async () => {
    const [page] = await setup.raw.query<PageRow>(statement.sql, statement.params);
    if (page?.data.length !== row.data.length) throw new Error(`${workload.label}: raw page changed`);
  };
  // Both sides warmed up first; then the timed requests in blocks, in the order service, raw, raw,
  // service, ... so that whatever else the machine does (a checkpoint, autovacuum after seeding)
  // falls on both sides alike.
  await runLoad(serviceCall, { ...options, requests: 0 });
  await runLoad(rawCall, { ...options, requests: 0 });
  const block = { ...options, requests: Math.ceil(options.requests / READ_BLOCKS), warmup: 0 };
  const services: LoadResult[] = [];
  const raws: LoadResult[] = [];
  for (let at = 0; at < READ_BLOCKS; at++) {
    const serviceFirst = at % 4 === 0 || at % 4 === 3;
    for (const side of serviceFirst ? ['service', 'raw'] : ['raw', 'service']) {
      if (side === 'service') services.push(await runLoad(serviceCall, block));
      else raws.push(await runLoad(rawCall, block));
    }
  }
  return {
    workload,
    backend: setup.backend,
    service: combine(services),
    raw: combine(raws),
    serviceBytes,
    rawBytes,
  };
}

/** Blocks each side's timed requests are run in, alternating with the other side's. */
const READ_BLOCKS = 8;

/** The three pages of issue 3, page 1 each, in a tenant keyed "main"; limit=100 gets 3x the requests. */
export function readWorkloads(
  rows: number,
  items: number,
  requests: number,
): { workload: ReadWorkload; requests: number }[] {
  return [
    {
      workload: {
        label: 'GET /v1/customers?limit=1000',
        path: '/v1/customers?limit=1000',
        tenant: 'main',
        total: rows,
        items: Math.min(1000, rows),
      },
      requests,
    },
    {
      workload: {
        label: 'GET /v1/customers?limit=100',
        path: '/v1/customers?limit=100',
        tenant: 'main',
        total: rows,
        items: Math.min(100, rows),
      },
      requests: requests * 3,
    },
    {
      workload: {
        label: `GET /v1/deliveries/pending?limit=500 (${items} items each)`,
        path: '/v1/deliveries/pending?limit=500',
        tenant: 'main',
        total: rows,
        items: Math.min(500, rows),
      },
      requests,
    },
  ];
}

export function readRows(results: readonly ReadResult[]): string[][] {
  return results.map((r) => {
    const s = summary(r.service);
    const w = summary(r.raw);
    return [
      r.workload.label,
      r.backend,
      s.rps.toFixed(0),
      ms(s.p50),
      ms(s.p99),
      w.rps.toFixed(0),
      ms(w.p50),
      ms(w.p99),
      ratio(s.p50 / w.p50),
      ratio(w.rps / s.rps),
      `${(r.serviceBytes / 1024).toFixed(0)} kB`,
    ];
  });
}

export const READ_HEADER = [
  'workload',
  'backend',
  'service req/s',
  'p50 ms',
  'p99 ms',
  'raw req/s',
  'p50 ms',
  'p99 ms',
  'p50 service/raw',
  'req/s raw/service',
  'answer',
];

/** EXPLAIN (ANALYZE, BUFFERS) of the statement a request sends, run on the raw side. */
export async function explainRead(setup: ReadSetup, workload: ReadWorkload): Promise<string> {
  const statement = readStatement(workload.path, setup.tenants[workload.tenant]!.id);
  const rows = await setup.raw.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS) ${statement.sql}`,
    statement.params,
  );
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

/** A filtered list's page measured with its total counted, and with the total kept from before. */
export interface FilteredWalk {
  label: string;
  /** Latencies (ms) of pages whose total had to be counted (each request a filter not seen before). */
  counted: number[];
  /** Latencies (ms) of the same page again: the total counted before is still valid. */
  kept: number[];
}

/**
 * How a client walking a filtered list fares (issue 4: totalItems must be cheap): page 2 of
 * `created_from=<date>` (every customer matches) with limit=100, one request at a time. "Counted":
 * each request uses a date no request used before, so its total is counted (count(*) over the
 * tenant's rows); "kept": the same request repeated, whose total the service kept with the list's
 * version. Service side only: the raw statement has no memory between requests.
 */
export async function measureFilteredWalk(setup: ReadSetup, requests: number): Promise<FilteredWalk> {
  const tenant = setup.tenants.large!;
  const path = (day: number) => {
    const date = new Date(Date.UTC(2000, 0, 1 + day)).toISOString().slice(0, 10);
    return `/v1/customers?created_from=${date}&limit=100&page=2`;
  };
  const timed = async (url: string) => {
    const started = performance.now();
    const answer = await setup.client.request('GET', url, tenant.headers);
    const elapsed = performance.now() - started;
    const meta = JSON.parse(answer.body.toString()).meta as { totalItems: number };
    if (answer.status !== 200 || meta.totalItems !== tenant.plan.customers) {
      throw new Error(`${url}: HTTP ${answer.status}, totalItems ${meta.totalItems}`);
    }
    return elapsed;
  };
  const counted: number[] = [];
  const kept: number[] = [];
  await timed(path(0));
  for (let n = 1; n <= requests; n++) {
    counted.push(await timed(path(n)));
    kept.push(await timed(path(0)));
  }
  return {
    label: `GET /v1/customers?created_from=...&limit=100&page=2, ${tenant.plan.customers.toLocaleString('en-US')} customers`,
    counted,
    kept,
  };
}
