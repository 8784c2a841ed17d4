/**
 * Fairness between tenants (issue 12 item 5): how tenant B's small reads fare while tenant A sends
 * large batches at a fixed concurrency, and what A's batches cost with and without B. Used by
 * bench/fairness.ts; see bench/README.md.
 */
import { generateCustomers } from '../../src/seed/generate.js';
import { encode } from './batch-bench.js';
import { createPgDatabase, rawPostgres, tempDir } from './databases.js';
import { Client, type LoadResult, summary } from './load.js';
import { CLI, freePort, serverEnv, startServer } from './server.js';
import { LOOP_PROBE, type ProbeFigures, ServerProbe } from './server-probe.js';
import { formatTable, median, ms } from './stats.js';
import { createTenant, type ServiceTenant, signIn } from './tenant.js';

export type Backend = 'postgres' | 'pglite';

export interface FairnessOptions {
  /** Seconds each timed phase runs (A's workers then finish the batch they are sending). */
  seconds: number;
  /** A's concurrent batches. */
  concurrency: number;
  /** Items per A batch. */
  items: number;
}

/** B's reads: small pages of a small tenant, 50 a second, as several ERP pollers would send them. */
const B_PATH = '/v1/customers?limit=10';
const B_INTERVAL_MS = 20;
/** Sockets of B's client: enough that a read never waits for one while earlier reads are slow. */
const B_SOCKETS = 64;
const B_CUSTOMERS = 200;
/** A's batches, one at a time, to compare with today's single-batch time. */
const A_SINGLE_ROUNDS = 3;

export interface PhaseResult {
  backend: Backend;
  phase: string;
  b: LoadResult | undefined;
  a: { samples: number[]; wallMs: number; statuses: Map<string, number> } | undefined;
  probe: ProbeFigures;
}

interface Setup {
  backend: Backend;
  probe: ServerProbe;
  a: ServiceTenant;
  b: ServiceTenant;
  aClient: Client;
  bClient: Client;
  /** One body per A worker, each its own 10,000 keys (upserts without row-lock waits between them). */
  bodies: Uint8Array<ArrayBuffer>[];
  path: string;
}

async function prepare(backend: Backend, options: FairnessOptions): Promise<Setup> {
  const env = serverEnv();
  env.METRICS_PORT = String(await freePort());
  env.BENCH_LOOP_PROBE_PORT = String(await freePort());
  let url: string | undefined;
  if (backend === 'postgres') {
    url = await createPgDatabase();
    env.DATABASE_URL = url;
  } else {
    env.DATA_DIR = tempDir('sfa-bench-fair-');
  }
  const createdA = await createTenant(env, CLI, 'fair-a');
  const createdB = await createTenant(env, CLI, 'fair-b');
  // BENCH_CPU_PROF=<dir>: the server writes a CPU profile there when it exits (as bench:read and batch).
  const profile = process.env.BENCH_CPU_PROF;
  const server = await startServer(env, [
    '--import',
    LOOP_PROBE,
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
  ]);
  const pg = url ? { client: await rawPostgres(url), database: new URL(url).pathname.slice(1) } : undefined;
  const probe = new ServerProbe(
    {
      metrics: `http://127.0.0.1:${env.METRICS_PORT}/metrics`,
      loop: `http://127.0.0.1:${env.BENCH_LOOP_PROBE_PORT}/`,
    },
    server.pid,
    pg,
  );
  const setup: Setup = {
    backend,
    probe,
    a: await signIn(server.baseUrl, createdA),
    b: await signIn(server.baseUrl, createdB),
    aClient: new Client(server.baseUrl, options.concurrency),
    bClient: new Client(server.baseUrl, B_SOCKETS),
    bodies: Array.from({ length: options.concurrency }, (_, worker) =>
      encode(generateCustomers({ from: worker * options.items, count: options.items, seed: 12 })),
    ),
    path: '/api/customers/batch-create',
  };
  const seeded = await postBatch(
    setup,
    setup.b,
    encode(generateCustomers({ from: 0, count: B_CUSTOMERS, seed: 7 })),
  );
  if (seeded.status !== 201) throw new Error(`seeding B: HTTP ${seeded.status}`);
  // Warm-up: every A body once (the keys then exist: every later batch is an update), B's page a few times.
  for (const body of setup.bodies) {
    const posted = await postBatch(setup, setup.a, body);
    if (posted.status !== 201) throw new Error(`warm-up A: HTTP ${posted.status}`);
  }
  for (let n = 0; n < 50; n++) await readB(setup);
  return setup;
}

/** A batch of the given tenant on A's client (its sockets are free before the phases). */
async function postBatch(setup: Setup, tenant: ServiceTenant, body: Uint8Array) {
  const answer = await setup.aClient.request(
    'POST',
    setup.path,
    { 'content-type': 'application/json', ...tenant.headers },
    body,
  );
  return answer;
}

async function readB(setup: Setup): Promise<void> {
  const answer = await setup.bClient.request('GET', B_PATH, setup.b.headers);
  if (answer.status !== 200) {
    throw new Error(`B ${B_PATH}: HTTP ${answer.status} ${answer.body.toString().slice(0, 300)}`);
  }
}

/**
 * B's reads at a fixed rate (open loop: one every B_INTERVAL_MS whether or not the last one was
 * answered), until stop() resolves. A fixed rate keeps B's own load the same in every phase: a closed
 * loop would send more reads, and take more CPU from A, exactly when B is served faster.
 */
function startReaders(setup: Setup): { stop(): Promise<LoadResult> } {
  const samples: number[] = [];
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  const timer = setInterval(() => {
    const at = performance.now();
    const read = readB(setup).then(
      () => {
        samples.push(performance.now() - at);
        pending.delete(read);
      },
      (error: Error) => {
        failure ??= error;
        pending.delete(read);
      },
    );
    pending.add(read);
  }, B_INTERVAL_MS);
  let failure: Error | undefined;
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      if (failure) throw failure;
      return { samples, wallMs: performance.now() - started };
    },
  };
}

/**
 * A's workers, closed loop: each sends its own body again as soon as the last answer is read, until
 * `seconds` have passed (or `rounds` batches each). A refusal (429/503) must carry Retry-After; the
 * worker then waits that long (at most until the phase ends), as a well-behaved client would.
 */
async function runA(
  setup: Setup,
  workers: number,
  until: { seconds?: number; rounds?: number },
): Promise<NonNullable<PhaseResult['a']>> {
  const samples: number[] = [];
  const statuses = new Map<string, number>();
  const started = performance.now();
  const deadline = started + (until.seconds ?? Number.POSITIVE_INFINITY) * 1000;
  const worker = async (w: number) => {
    for (let round = 0; round < (until.rounds ?? Number.POSITIVE_INFINITY); round++) {
      if (performance.now() >= deadline) return;
      const at = performance.now();
      const answer = await postBatch(setup, setup.a, setup.bodies[w]!);
      const elapsed = performance.now() - at;
      const retryAfter = answer.headers['retry-after'];
      const refused = answer.status === 429 || answer.status === 503;
      const key =
        refused && retryAfter === undefined ? `${answer.status} without Retry-After` : String(answer.status);
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (answer.status === 201) samples.push(elapsed);
      else if (refused) {
        const wait = Math.min(Number(retryAfter ?? 1) * 1000, Math.max(0, deadline - performance.now()));
        await new Promise((done) => setTimeout(done, wait));
      } else if (answer.status >= 500) {
        console.error(`  A: HTTP ${answer.status} ${answer.body.toString().slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return { samples, wallMs: performance.now() - started, statuses };
}

async function phase(
  setup: Setup,
  name: string,
  work: () => Promise<Pick<PhaseResult, 'a' | 'b'>>,
): Promise<PhaseResult> {
  const end = await setup.probe.start();
  const { a, b } = await work();
  const result = { backend: setup.backend, phase: name, a, b, probe: await end() };
  console.log(`  ${setup.backend} ${name}: ${describe(result)}`);
  return result;
}

/** The four phases on one backend: B alone, A one at a time, A at its concurrency alone, A with B. */
export async function runFairness(backend: Backend, options: FairnessOptions): Promise<PhaseResult[]> {
  const setup = await prepare(backend, options);
  const results: PhaseResult[] = [];
  const sleep = (s: number) => new Promise((done) => setTimeout(done, s * 1000));
  results.push(
    await phase(setup, 'B alone', async () => {
      const readers = startReaders(setup);
      await sleep(Math.min(options.seconds, 3));
      return { a: undefined, b: await readers.stop() };
    }),
  );
  results.push(
    await phase(setup, 'A alone, 1 batch at a time', async () => ({
      a: await runA(setup, 1, { rounds: A_SINGLE_ROUNDS }),
      b: undefined,
    })),
  );
  results.push(
    await phase(setup, `A alone, ${options.concurrency} concurrent`, async () => ({
      a: await runA(setup, options.concurrency, { seconds: options.seconds }),
      b: undefined,
    })),
  );
  results.push(
    await phase(setup, `A ${options.concurrency} concurrent + B`, async () => {
      const readers = startReaders(setup);
      const a = await runA(setup, options.concurrency, { seconds: options.seconds });
      return { a, b: await readers.stop() };
    }),
  );
  setup.aClient.close();
  setup.bClient.close();
  return results;
}

function statusText(statuses: Map<string, number>): string {
  return [...statuses].map(([status, count]) => `${count}x ${status}`).join(', ');
}

function describe(r: PhaseResult): string {
  const parts: string[] = [];
  if (r.b) {
    const s = summary(r.b);
    parts.push(`B p50 ${ms(s.p50)} p99 ${ms(s.p99)} ms (${r.b.samples.length} reads)`);
  }
  if (r.a) {
    const p50 = r.a.samples.length ? ms(median(r.a.samples)) : '-';
    parts.push(
      `A ${statusText(r.a.statuses)}, batch p50 ${p50} ms, ${(r.a.samples.length / (r.a.wallMs / 1000)).toFixed(2)} batches/s`,
    );
  }
  const p = r.probe;
  parts.push(
    `loop delay p99 ${ms(p.loopP99)} max ${ms(p.loopMax)} ms, busy ${(p.loopUtilization * 100).toFixed(0)} %`,
  );
  return parts.join('; ');
}

const HEADER = [
  'backend',
  'phase',
  'B p50 ms',
  'B p99 ms',
  'A answers',
  'A batch p50 ms',
  'A batches/s',
  'loop delay p50/p99/max ms, busy',
  'pool in use / waiting (mean, max)',
  'CPU server / PostgreSQL',
];

export function fairnessTable(results: readonly PhaseResult[]): string {
  const rows = results.map((r) => {
    const b = r.b ? summary(r.b) : undefined;
    const p = r.probe;
    return [
      r.backend,
      r.phase,
      b ? ms(b.p50) : '',
      b ? ms(b.p99) : '',
      r.a ? statusText(r.a.statuses) : '',
      r.a?.samples.length ? ms(median(r.a.samples)) : '',
      r.a ? (r.a.samples.length / (r.a.wallMs / 1000)).toFixed(2) : '',
      `${ms(p.loopP50)} / ${ms(p.loopP99)} / ${ms(p.loopMax)}, ${(p.loopUtilization * 100).toFixed(0)} %`,
      r.backend === 'postgres'
        ? `${p.inUseMean.toFixed(1)} / ${p.waitingMean.toFixed(1)}, ${p.waitingMax}`
        : '(one connection)',
      `${p.serverCpu.toFixed(2)} / ${p.postgresCpu === undefined ? '(in server)' : p.postgresCpu.toFixed(2)}`,
    ];
  });
  return formatTable(HEADER, rows);
}
