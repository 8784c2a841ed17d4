/**
 * Batch write benchmark: the service end to end over HTTP vs. the same statement sent raw, on
 * PostgreSQL and on embedded PGlite. Run with `npm run bench:batch`; see bench/README.md.
 */
import { cpus, loadavg } from 'node:os';
import { products } from '../src/resources/products.js';
import { cleanupAll } from './lib/cleanup.js';
import {
  createPgDatabase,
  createRawTenant,
  insertRawProducts,
  PG_ADMIN_URL,
  type RawClient,
  rawPglite,
  rawPostgres,
  tempDir,
  tenantId,
} from './lib/databases.js';
import { type ChildServer, CLI, startServer } from './lib/server.js';
import { formatTable, median, ms, ratio } from './lib/stats.js';
import { type ServiceTenant, serviceTenant } from './lib/tenant.js';
import {
  BATCH_ITEMS,
  checkCounts,
  PRODUCT_COUNT,
  productCode,
  productItems,
  rawStatement,
  type Workload,
  workloads,
} from './lib/workloads.js';

type Backend = 'postgres' | 'pglite';

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw ? Number(raw) : fallback;
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name}: ${min} to ${max}`);
  return value;
}

function envList<T extends string>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw) return [...all];
  const chosen = raw.split(',').map((s) => s.trim()) as T[];
  const unknown = chosen.filter((item) => !all.includes(item));
  if (unknown.length > 0)
    throw new Error(`${name}: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return chosen;
}

/** Timed rounds per workload and backend, after one warm-up round. */
const ROUNDS = envInt('BENCH_ROUNDS', 9, 1, 20);
const BACKENDS = envList<Backend>('BENCH_BACKENDS', ['postgres', 'pglite']);
const WORKLOADS = envList('BENCH_WORKLOADS', ['stocks', 'prices'] as const).map(
  (name) => workloads.find((w) => w.name === name)!,
);
/** When set, the server runs with --cpu-prof and writes its profile here on exit. */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;

interface Result {
  workload: Workload;
  backend: Backend;
  service: number[];
  raw: number[];
}

interface Sides {
  baseUrl: string;
  tenant: ServiceTenant;
  raw: RawClient;
  rawTenant: number;
  /** The service tenant's id when the benchmark can read the server's database (PostgreSQL). */
  serviceTenantId: number | undefined;
}

interface Posted {
  status: number;
  body: Record<string, unknown>;
  elapsed: number;
}

/** The request body: JSON text, UTF-8 encoded, prepared before any clock starts. */
const encode = (items: readonly unknown[]) => new TextEncoder().encode(JSON.stringify(items));

/** One request; the clock runs from fetch until the whole response body is read. */
async function post(sides: Sides, path: string, body: Uint8Array<ArrayBuffer>): Promise<Posted> {
  const started = performance.now();
  const response = await fetch(sides.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...sides.tenant.headers },
    body,
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text: text.slice(0, 500) };
  }
  return { status: response.status, body: parsed, elapsed };
}

function expect201(what: string, posted: Posted): void {
  if (posted.status !== 201) {
    throw new Error(`${what}: HTTP ${posted.status} ${JSON.stringify(posted.body).slice(0, 500)}`);
  }
}

/** Service side of one round: the body is encoded before the clock starts. */
async function serviceRound(sides: Sides, workload: Workload, items: readonly unknown[]): Promise<number> {
  const body = encode(items);
  const posted = await post(sides, workload.resource.path, body);
  expect201(`service ${workload.name}`, posted);
  checkCounts(`service ${workload.name}`, workload.expected, posted.body);
  return posted.elapsed;
}

/** Raw side of one round: statement and column arrays are built before the clock starts. */
async function rawRound(sides: Sides, workload: Workload, items: readonly unknown[]): Promise<number> {
  const { sql, params } = await rawStatement(workload.resource, sides.rawTenant, items);
  const started = performance.now();
  const [row] = await sides.raw.query<{ created: number }>(sql, params);
  const elapsed = performance.now() - started;
  if (row?.created !== workload.expected.created) {
    throw new Error(
      `raw ${workload.name}: expected ${workload.expected.created} created, got ${row?.created}`,
    );
  }
  return elapsed;
}

async function loadProducts(sides: Sides): Promise<void> {
  const posted = await post(sides, products.path, encode(productItems()));
  expect201('service products', posted);
  checkCounts('service products', { created: PRODUCT_COUNT, updated: 0 }, posted.body);
  await insertRawProducts(
    sides.raw,
    sides.rawTenant,
    Array.from({ length: PRODUCT_COUNT }, (_, at) => productCode(at)),
  );
}

async function runWorkload(sides: Sides, backend: Backend, workload: Workload): Promise<Result> {
  if (workload.seed) {
    const items = workload.seed();
    const posted = await post(sides, workload.resource.path, encode(items));
    expect201(`service ${workload.name} seed`, posted);
    const { sql, params } = await rawStatement(workload.resource, sides.rawTenant, items);
    await sides.raw.query(sql, params);
  }
  const result: Result = { workload, backend, service: [], raw: [] };
  // Round 1 warms up both sides; the order alternates so neither side always runs on a fresher table.
  for (let round = 1; round <= ROUNDS + 1; round++) {
    const items = workload.items(round);
    let service: number;
    let raw: number;
    if (round % 2) {
      service = await serviceRound(sides, workload, items);
      raw = await rawRound(sides, workload, items);
    } else {
      raw = await rawRound(sides, workload, items);
      service = await serviceRound(sides, workload, items);
    }
    if (round > 1) {
      result.service.push(service);
      result.raw.push(raw);
    }
  }
  await verifyRows(sides, workload);
  const list = (samples: number[]) => samples.map(ms).join(' ');
  console.log(
    `  ${backend} ${workload.name}: service [${list(result.service)}] ms, raw [${list(result.raw)}] ms`,
  );
  return result;
}

/** Both tenants hold what the rounds wrote (the service's only where the benchmark can read it). */
async function verifyRows(sides: Sides, workload: Workload): Promise<void> {
  const rounds = ROUNDS + 1;
  const expected =
    workload.name === 'stocks'
      ? { rows: BATCH_ITEMS * rounds, updated: 0 }
      : { rows: (BATCH_ITEMS / 2) * (rounds + 1), updated: (BATCH_ITEMS / 2) * rounds };
  const updated = workload.name === 'prices' ? 'count(updated_at)' : '0';
  const tenants = [sides.rawTenant, ...(sides.serviceTenantId === undefined ? [] : [sides.serviceTenantId])];
  for (const tenant of tenants) {
    const [row] = await sides.raw.query<{ rows: number; updated: number }>(
      `SELECT count(*)::int AS rows, ${updated}::int AS updated FROM ${workload.name} WHERE tenant_id = $1`,
      [tenant],
    );
    if (row?.rows !== expected.rows || row.updated !== expected.updated) {
      throw new Error(
        `${workload.name} tenant ${tenant}: expected ${JSON.stringify(expected)}, found ${JSON.stringify(row)}`,
      );
    }
  }
}

async function runBackend(backend: Backend): Promise<Result[]> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  delete env.DATA_DIR;
  let url: string | undefined;
  if (backend === 'postgres') {
    url = await createPgDatabase();
    env.DATABASE_URL = url;
  } else {
    env.DATA_DIR = tempDir('sfa-bench-pglite-');
  }
  const nodeArgs = CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : [];
  let server: ChildServer | undefined;
  const tenant = await serviceTenant({
    env,
    cli: CLI,
    async start() {
      server = await startServer(env, nodeArgs);
      return server.baseUrl;
    },
  });
  if (!server) throw new Error('serviceTenant did not start the server');
  const raw = url ? await rawPostgres(url) : await rawPglite();
  const sides: Sides = {
    baseUrl: server.baseUrl,
    tenant,
    raw,
    rawTenant: await createRawTenant(raw),
    serviceTenantId: url ? await tenantId(raw, tenant.name) : undefined,
  };
  await loadProducts(sides);
  const results: Result[] = [];
  for (const workload of WORKLOADS) results.push(await runWorkload(sides, backend, workload));
  return results;
}

async function serverVersion(): Promise<string> {
  if (!BACKENDS.includes('postgres')) return '';
  const client = await rawPostgres(PG_ADMIN_URL);
  const [row] = await client.query<{ server_version: string }>('SHOW server_version');
  await client.close();
  return `, PostgreSQL ${row?.server_version}`;
}

function report(results: readonly Result[]): void {
  const rows = results.map((r) => {
    const service = median(r.service);
    const raw = median(r.raw);
    return [r.workload.label, r.backend, ms(service), ms(raw), ratio(service / raw)];
  });
  console.log(
    `\n${formatTable(['workload', 'backend', 'service median ms', 'raw SQL median ms', 'service/raw'], rows)}`,
  );
  for (const workload of WORKLOADS) {
    const of = (backend: Backend) => results.find((r) => r.workload === workload && r.backend === backend);
    const lite = of('pglite');
    const postgres = of('postgres');
    if (lite && postgres) {
      const value = median(lite.service) / median(postgres.service);
      console.log(`PGlite/PostgreSQL, service, ${workload.label}: ${ratio(value)}`);
    }
  }
}

async function main(): Promise<void> {
  console.log(
    `batch benchmark ${new Date().toISOString()}: Node ${process.version}, ${cpus().length} CPUs${await serverVersion()}, ` +
      `${ROUNDS} timed rounds after 1 warm-up, median reported`,
  );
  const results: Result[] = [];
  for (const backend of BACKENDS) {
    const started = performance.now();
    try {
      results.push(...(await runBackend(backend)));
    } finally {
      // Stop this backend's server and drop its database before the next backend runs.
      await cleanupAll();
    }
    console.log(`  ${backend} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  report(results);
  // Other work on the machine shows up directly in the figures: say how busy it was.
  console.log(`load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}`);
}

const loadAtStart = loadavg()[0]!;

try {
  await main();
} catch (error) {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}
// A keep-alive socket or a pool timer must not hold the finished benchmark open.
process.exit(process.exitCode ?? 0);
