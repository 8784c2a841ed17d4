import { prices } from '../../src/resources/prices.js';
import { random } from '../../src/seed/generate.js';
import type { Sides } from './batch-bench.js';
import { type CpuSplit, cpuNow, cpuSpent } from './cpu-time.js';
import { type RawClient, rawPostgres, rawPostgresPool } from './databases.js';
import { Client } from './load.js';
import { productCode, type RawStatement, rawStatement } from './workloads.js';

/**
 * Concurrent writers on overlapping keys: `clients` writers, each sending 1,000-item price batches
 * drawn from the same 1,500 products (price list C1) in random order, for a fixed time. Two writers'
 * batches share about two thirds of their keys. What matters: errors (anything but 201, on the raw
 * side any failed statement) and deadlocks, read from pg_stat_database, which counts every deadlock
 * PostgreSQL detected, including those the service retried without the client noticing.
 */

export interface ContentionOptions {
  clients: number;
  seconds: number;
  batchItems: number;
  /** Products the batches draw their keys from. */
  keySpace: number;
  /** Distinct batches per writer, cycled. */
  batchesPerClient: number;
  /**
   * Each writer draws from its own `keySpace` products (writer c from c * keySpace on): no two
   * writers share a key, so nothing waits on a row lock and the figure is the admission's and the
   * pipeline's alone (issue 20's W3: four concurrent upserts of one tenant).
   */
  disjoint?: boolean;
  /** The raw side runs first (alternated by callers, so that neither always runs on the other's dead rows). */
  rawFirst?: boolean;
  /**
   * Another build's server on the same database and tenant (BENCH_BASELINE): its service side runs
   * too, between the other two, so both builds are measured in the same minutes.
   */
  baseline?: ServiceServer | undefined;
}

/** A server the service side writes through: its URL, and its process for the CPU it spends. */
export interface ServiceServer {
  baseUrl: string;
  pid: number;
  /** A baseline on a database of its own: its tenant's headers and that database. */
  own?: { headers: Readonly<Record<string, string>>; databaseUrl: string };
}

export interface ContentionSide {
  batches: number;
  errors: number;
  deadlocks: number;
  seconds: number;
  firstError: string | undefined;
  /** CPU milliseconds spent while this side ran, by process (undefined off Linux). */
  cpu: CpuSplit | undefined;
}

function batchItems(seed: number, client: number, options: ContentionOptions): Record<string, unknown>[] {
  const rng = random(seed);
  const first = options.disjoint ? client * options.keySpace : 0;
  const codes = Array.from({ length: options.keySpace }, (_, at) => first + at);
  // Fisher-Yates: a random order of distinct products.
  for (let at = codes.length - 1; at > 0; at--) {
    const other = Math.floor(rng() * (at + 1));
    [codes[at], codes[other]] = [codes[other]!, codes[at]!];
  }
  return codes.slice(0, options.batchItems).map((at) => ({
    product_code: productCode(at),
    price_list: 'C1',
    price: (1_000 + Math.floor(rng() * 100_000)) / 100,
    maximum_discount: 10,
    factor_description: 'UND',
  }));
}

async function deadlocks(admin: RawClient): Promise<number> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const [row] = await admin.query<{ deadlocks: string }>(
    'SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(row?.deadlocks ?? 0);
}

/** Backends flush their statistics at most once a second: wait before reading them. */
const settle = () => new Promise((done) => setTimeout(done, 1_500));

async function timed(
  clients: number,
  seconds: number,
  write: (client: number, round: number) => Promise<void>,
): Promise<Omit<ContentionSide, 'deadlocks' | 'cpu'>> {
  const deadline = performance.now() + seconds * 1000;
  let batches = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let round = 0; performance.now() < deadline; round++) {
        try {
          await write(client, round);
          batches++;
        } catch (error) {
          errors++;
          firstError ??= (error as Error).message.slice(0, 300);
        }
      }
    }),
  );
  return { batches, errors, firstError, seconds: (performance.now() - started) / 1000 };
}

/** PostgreSQL only (PGlite serialises every statement: no two batches ever overlap there). */
export async function runContention(
  sides: Sides,
  options: ContentionOptions,
): Promise<{ service: ContentionSide; raw: ContentionSide; baseline?: ContentionSide }> {
  if (!sides.url) throw new Error('contention runs on PostgreSQL');
  const admin = await rawPostgres(sides.url);
  const items = Array.from({ length: options.clients }, (_, client) =>
    Array.from({ length: options.batchesPerClient }, (_, b) =>
      batchItems(client * 1_000 + b + 1, client, options),
    ),
  );

  // Service: bodies encoded before the clock starts; one keep-alive socket per writer.
  const bodies = items.map((list) => list.map((batch) => new TextEncoder().encode(JSON.stringify(batch))));
  const pid = sides.server.pid;
  // Before each side, untimed: the dead rows of the side before it gone, as autovacuum would have
  // them gone on a production database (this machine's PostgreSQL runs without it).
  const vacuum = (on: RawClient = admin) => on.query('VACUUM prices');
  const runService = async (server: ServiceServer): Promise<ContentionSide> => {
    const database = server.own ? await rawPostgres(server.own.databaseUrl) : admin;
    const headers = { 'content-type': 'application/json', ...(server.own?.headers ?? sides.tenant.headers) };
    await vacuum(database);
    const http = new Client(server.baseUrl, options.clients);
    const before = await deadlocks(database);
    const cpuBefore = cpuNow(server.pid);
    const run = await timed(options.clients, options.seconds, async (client, round) => {
      const list = bodies[client]!;
      const answer = await http.request('POST', prices.path, headers, list[round % list.length]!);
      if (answer.status !== 201)
        throw new Error(`HTTP ${answer.status} ${answer.body.toString().slice(0, 200)}`);
    });
    const cpu = cpuSpent(cpuBefore, cpuNow(server.pid));
    http.close();
    await settle();
    const counted = (await deadlocks(database)) - before;
    if (database !== admin) await database.close();
    return { ...run, cpu, deadlocks: counted };
  };

  // Raw: the service's own statement with column arrays built from the items (rawStatement), on a
  // pool of one connection per writer.
  const statements: RawStatement[][] = [];
  for (const list of items) {
    const built: RawStatement[] = [];
    for (const batch of list) built.push(rawStatement(prices, sides.rawTenant, batch));
    statements.push(built);
  }
  const runRaw = async (): Promise<ContentionSide> => {
    await vacuum();
    const pool = await rawPostgresPool(sides.url!, options.clients);
    const before = await deadlocks(admin);
    const cpuBefore = cpuNow(pid);
    const run = await timed(options.clients, options.seconds, async (client, round) => {
      const list = statements[client]!;
      const { sql, params } = list[round % list.length]!;
      try {
        await pool.query(sql, params);
      } catch (error) {
        throw new Error(`${(error as { code?: string }).code ?? ''} ${(error as Error).message}`);
      }
    });
    // Read before the pool closes: its backends' time goes with them.
    const cpu = cpuSpent(cpuBefore, cpuNow(pid));
    await pool.close();
    await settle();
    return { ...run, cpu, deadlocks: (await deadlocks(admin)) - before };
  };

  const ours = { baseUrl: sides.baseUrl, pid };
  let service: ContentionSide;
  let raw: ContentionSide;
  let baseline: ContentionSide | undefined;
  if (options.rawFirst) {
    raw = await runRaw();
    if (options.baseline) baseline = await runService(options.baseline);
    service = await runService(ours);
  } else {
    service = await runService(ours);
    if (options.baseline) baseline = await runService(options.baseline);
    raw = await runRaw();
  }
  await admin.close();
  return { service, raw, ...(baseline ? { baseline } : {}) };
}
