/**
 * Batch write benchmark: the service end to end over HTTP vs. the same statement sent raw, on
 * PostgreSQL and on embedded PGlite (bench/batch.ts and bench/run.ts). See bench/README.md.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { products } from '../../src/resources/products.js';
import {
  createPgDatabase,
  createRawTenant,
  insertRawProducts,
  type RawClient,
  rawPglite,
  rawPostgres,
  tempDir,
  tenantId,
} from './databases.js';
import { Client } from './load.js';
import { type ChildServer, CLI, freePort, serverEnv, startServer } from './server.js';
import { batchRatio, formatTable, median, ms, ratio } from './stats.js';
import { type ServiceTenant, serviceTenant } from './tenant.js';
import {
  checkCounts,
  PRODUCT_COUNT,
  productCode,
  productItems,
  rawStatement,
  rowsDiffering,
  type Workload,
} from './workloads.js';

export type Backend = 'postgres' | 'pglite';

export interface BatchOptions {
  /** Timed rounds per workload and backend, after one warm-up round. */
  rounds: number;
  workloads: readonly Workload[];
  /** When set, the server runs with --cpu-prof and writes its profile here on exit. */
  cpuProfDir?: string | undefined;
}

export interface BatchResult {
  workload: Workload;
  backend: Backend;
  service: number[];
  raw: number[];
  /** Another build's service (BENCH_BASELINE), the same items in the same rounds. */
  baseline?: number[];
}

/** Another build's server and its tenant, writing the same items as the service (BENCH_BASELINE). */
export interface Baseline {
  server: ChildServer;
  /** The sides to post through: this build's, with the baseline's URL and tenant. */
  sides: Sides;
  /** On a database of its own (its migrations, its tenant), or on this build's database. */
  ownDatabase: boolean;
  /** The database it writes to. */
  databaseUrl: string;
}

/** The service (a server of the production build and its tenant) and the raw side, ready to write. */
export interface Sides {
  backend: Backend;
  server: ChildServer;
  /** PostgreSQL: the database both sides write to; PGlite: undefined (the raw side has its own). */
  url: string | undefined;
  baseUrl: string;
  /** The server's GET /metrics (its own listener, METRICS_PORT). */
  metricsUrl: string;
  tenant: ServiceTenant;
  raw: RawClient;
  rawTenant: number;
  /** The service tenant's id when the benchmark can read the server's database (PostgreSQL). */
  serviceTenantId: number | undefined;
  /** The server's environment and node options: another build's server starts with the same (startBaseline). */
  serverEnv: NodeJS.ProcessEnv;
  nodeArgs: readonly string[];
}

interface Posted {
  status: number;
  body: Record<string, unknown>;
  elapsed: number;
}

/** The request body: JSON text, UTF-8 encoded, prepared before any clock starts. */
export const encode = (items: readonly unknown[]) => new TextEncoder().encode(JSON.stringify(items));

/** The client of the batch benchmarks: one keep-alive connection, as an integrator's job would keep. */
const clients = new WeakMap<Sides, Client>();

/** One request; the clock runs from sending until the whole response body is read. */
export async function post(sides: Sides, path: string, body: Uint8Array<ArrayBuffer>): Promise<Posted> {
  let client = clients.get(sides);
  if (!client) {
    client = new Client(sides.baseUrl, 1);
    clients.set(sides, client);
  }
  const started = performance.now();
  const answer = await client.request(
    'POST',
    path,
    { 'content-type': 'application/json', ...sides.tenant.headers },
    body,
  );
  const elapsed = performance.now() - started;
  const text = answer.body.toString();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text: text.slice(0, 500) };
  }
  return { status: answer.status, body: parsed, elapsed };
}

export function expect201(what: string, posted: Posted): void {
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
  const { sql, params } = rawStatement(workload.resource, sides.rawTenant, items);
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

export async function loadProducts(sides: Sides): Promise<void> {
  const posted = await post(sides, products.path, encode(productItems()));
  expect201('service products', posted);
  checkCounts('service products', { created: PRODUCT_COUNT, updated: 0 }, posted.body);
  await insertRawProducts(
    sides.raw,
    sides.rawTenant,
    Array.from({ length: PRODUCT_COUNT }, (_, at) => productCode(at)),
  );
}

async function runWorkload(
  sides: Sides,
  backend: Backend,
  workload: Workload,
  rounds: number,
  baseline: Baseline | undefined,
): Promise<BatchResult> {
  if (workload.seed) {
    const items = workload.seed();
    const posted = await post(sides, workload.resource.path, encode(items));
    expect201(`service ${workload.name} seed`, posted);
    const { sql, params } = rawStatement(workload.resource, sides.rawTenant, items);
    await sides.raw.query(sql, params);
    if (baseline?.ownDatabase) {
      expect201(
        `baseline ${workload.name} seed`,
        await post(baseline.sides, workload.resource.path, encode(items)),
      );
    }
  }
  const result: BatchResult = {
    workload,
    backend,
    service: [],
    raw: [],
    ...(baseline ? { baseline: [] } : {}),
  };
  // Round 1 warms up both sides; the order alternates so neither side always runs on a fresher table.
  for (let round = 1; round <= rounds + 1; round++) {
    const items = workload.items(round);
    let service: number;
    let raw: number;
    // The baseline writes the same items on its own database, before this build's service in odd
    // rounds and after it in even ones. (On the same database it would find them written already.)
    let other: number | undefined;
    if (baseline?.ownDatabase && round % 2 === 1) other = await serviceRound(baseline.sides, workload, items);
    if (round % 2) {
      service = await serviceRound(sides, workload, items);
      raw = await rawRound(sides, workload, items);
    } else {
      raw = await rawRound(sides, workload, items);
      service = await serviceRound(sides, workload, items);
    }
    if (baseline?.ownDatabase && round % 2 === 0) other = await serviceRound(baseline.sides, workload, items);
    if (round > 1) {
      result.service.push(service);
      result.raw.push(raw);
      if (other !== undefined) result.baseline?.push(other);
    }
  }
  await verifyRows(sides, workload, rounds + 1);
  const list = (samples: number[]) => samples.map(ms).join(' ');
  console.log(
    `  ${backend} ${workload.name}: service [${list(result.service)}] ms, raw [${list(result.raw)}] ms` +
      (result.baseline ? `, baseline [${list(result.baseline)}] ms` : ''),
  );
  return result;
}

/**
 * Both tenants hold what the rounds wrote, and (where the benchmark can read the server's database:
 * PostgreSQL) the same rows: the floor did the service's work, no more and no less.
 */
async function verifyRows(sides: Sides, workload: Workload, rounds: number): Promise<void> {
  const expected = workload.check(rounds);
  const table = workload.resource.table;
  const updated = table === 'prices' ? 'count(updated_at)' : '0';
  const tenants = [sides.rawTenant, ...(sides.serviceTenantId === undefined ? [] : [sides.serviceTenantId])];
  for (const tenant of tenants) {
    const [row] = await sides.raw.query<{ rows: number; updated: number }>(
      `SELECT count(*)::int AS rows, ${updated}::int AS updated FROM ${table} WHERE tenant_id = $1 AND ${expected.where}`,
      [tenant],
    );
    if (row?.rows !== expected.rows || row.updated !== expected.updated) {
      throw new Error(
        `${workload.name} tenant ${tenant}: expected ${JSON.stringify(expected)}, found ${JSON.stringify(row)}`,
      );
    }
  }
  if (sides.serviceTenantId !== undefined) {
    const differing = await rowsDiffering(sides.raw, workload.resource, [
      sides.serviceTenantId,
      sides.rawTenant,
    ]);
    if (differing !== 0)
      throw new Error(`${workload.name}: ${differing} rows differ between the service and the floor`);
  }
}

/**
 * A server of the production build on a fresh database (PostgreSQL: a new database; PGlite: a new
 * DATA_DIR) with a tenant signed in, and the raw side (PostgreSQL: a connection to the same database;
 * PGlite: an in-process PGlite of its own) with a tenant of its own. The caller runs cleanupAll().
 */
export async function prepareSides(backend: Backend, cpuProfDir?: string): Promise<Sides> {
  const env = serverEnv();
  let url: string | undefined;
  if (backend === 'postgres') {
    url = await createPgDatabase();
    env.DATABASE_URL = url;
  } else {
    env.DATA_DIR = tempDir('sfa-bench-pglite-');
  }
  const metricsPort = await freePort();
  env.METRICS_PORT = String(metricsPort);
  const nodeArgs = [
    ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : []),
    ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
  ];
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
  return {
    backend,
    server,
    url,
    baseUrl: server.baseUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    tenant,
    raw,
    rawTenant: await createRawTenant(raw),
    serviceTenantId: url ? await tenantId(raw, tenant.name) : undefined,
    serverEnv: env,
    nodeArgs,
  };
}

/**
 * Another build's server, for a comparison in one run (BENCH_BASELINE: the root of a built checkout,
 * e.g. of the commit before a change). On the same database (PostgreSQL) and so the same tenant and
 * credentials, where both builds know the same migrations; or, `ownDatabase`
 * (BENCH_BASELINE_DATABASE=own), on a new database its own command migrates, with a tenant of its own:
 * the way to weigh a change that lives in the database too (a trigger, an index).
 */
export async function startBaseline(sides: Sides, root: string, ownDatabase = false): Promise<Baseline> {
  if (!sides.url) throw new Error('a baseline server needs PostgreSQL');
  const cli = join(resolve(root), 'bin', 'sfa-backoffice.js');
  if (!existsSync(join(resolve(root), 'dist', 'cli.js')))
    throw new Error(`${root} is not built (npm run build)`);
  const env: NodeJS.ProcessEnv = { ...sides.serverEnv, METRICS_PORT: String(await freePort()) };
  if (ownDatabase) env.DATABASE_URL = await createPgDatabase();
  // BENCH_BASELINE_NODE_ARGS (when set, even empty) replaces BENCH_NODE_ARGS for the baseline: the
  // same build under two sets of V8 flags is weighed the same way.
  const own = process.env.BENCH_BASELINE_NODE_ARGS;
  const nodeArgs = own === undefined ? sides.nodeArgs : own.split(' ').filter(Boolean);
  let server: ChildServer | undefined;
  const start = async () => {
    server = await startServer(env, nodeArgs, cli);
    return server.baseUrl;
  };
  let tenant = sides.tenant;
  if (ownDatabase) tenant = await serviceTenant({ env, cli, start });
  else await start();
  if (!server) throw new Error('the baseline server did not start');
  const baseline: Baseline = {
    server,
    sides: { ...sides, server, baseUrl: server.baseUrl, tenant },
    ownDatabase,
    databaseUrl: env.DATABASE_URL ?? sides.url,
  };
  // The same history as the server it is weighed against: loadProducts' batch (on the same database
  // its products exist already, so it creates none). Without it the same build ran W3 with a fifth
  // less CPU per item as the second server than as the first (docs/decisions/0129-w3-measured-warm.md):
  // a server is measured as it was used.
  const posted = await post(baseline.sides, products.path, encode(productItems()));
  expect201('baseline products', posted);
  return baseline;
}

/** BENCH_BASELINE's server when set (BENCH_BASELINE_DATABASE=own: on a database of its own). */
export async function baselineFromEnv(sides: Sides): Promise<Baseline | undefined> {
  const root = process.env.BENCH_BASELINE;
  if (!root) return undefined;
  const where = process.env.BENCH_BASELINE_DATABASE ?? 'same';
  if (where !== 'same' && where !== 'own') throw new Error('BENCH_BASELINE_DATABASE is same or own');
  const baseline = await startBaseline(sides, root, where === 'own');
  console.log(
    `baseline: the build in ${root}, on ${baseline.ownDatabase ? 'a database of its own' : 'the same database'}`,
  );
  return baseline;
}

/**
 * Every workload on prepared sides whose products are loaded (loadProducts); a baseline on a database
 * of its own (startBaseline) writes the same items in the same rounds.
 */
export async function runBatchWorkloads(
  sides: Sides,
  options: BatchOptions,
  baseline?: Baseline,
): Promise<BatchResult[]> {
  if (baseline && !baseline.ownDatabase)
    throw new Error('batch workloads weigh a baseline on its own database');
  const results: BatchResult[] = [];
  for (const workload of options.workloads) {
    results.push(await runWorkload(sides, sides.backend, workload, options.rounds, baseline));
  }
  return results;
}

/**
 * One backend: a server of the production build on a fresh database, a tenant, 10,000 products on
 * both sides, then every workload. The caller runs cleanupAll() afterwards.
 */
export async function runBatchBackend(backend: Backend, options: BatchOptions): Promise<BatchResult[]> {
  const sides = await prepareSides(backend, options.cpuProfDir);
  await loadProducts(sides);
  const baseline = backend === 'postgres' ? await baselineFromEnv(sides) : undefined;
  return runBatchWorkloads(sides, options, baseline);
}

export const BATCH_HEADER = ['workload', 'backend', 'service median ms', 'raw SQL median ms', 'service/raw'];

export function batchRows(results: readonly BatchResult[]): string[][] {
  return results.map((r) => {
    const service = median(r.service);
    const raw = median(r.raw);
    return [r.workload.label, r.backend, ms(service), ms(raw), batchRatio(r.service, r.raw)];
  });
}

/** The table, then PGlite/PostgreSQL (service medians) for each workload run on both; then a baseline's. */
export function batchReport(results: readonly BatchResult[]): string {
  const lines = [formatTable(BATCH_HEADER, batchRows(results))];
  const weighed = results.filter((r) => r.baseline && r.baseline.length > 0);
  if (weighed.length > 0) {
    lines.push(
      '',
      formatTable(
        ['workload', 'backend', 'this build median ms', 'baseline median ms', 'baseline/this (speed)'],
        weighed.map((r) => [
          r.workload.label,
          r.backend,
          ms(median(r.service)),
          ms(median(r.baseline!)),
          batchRatio(r.baseline!, r.service),
        ]),
      ),
    );
  }
  for (const workload of new Set(results.map((r) => r.workload))) {
    const of = (backend: Backend) => results.find((r) => r.workload === workload && r.backend === backend);
    const lite = of('pglite');
    const postgres = of('postgres');
    if (lite && postgres) {
      const value = median(lite.service) / median(postgres.service);
      lines.push(`PGlite/PostgreSQL, service, ${workload.label}: ${ratio(value)}`);
    }
  }
  return lines.join('\n');
}
