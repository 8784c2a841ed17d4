/**
 * Issue 20's W3 on its own: one tenant's four concurrent 1,000-item price upserts, each writer on keys
 * of its own, against the raw floor (the same statements on four connections), PostgreSQL.
 * `npm run bench:concurrent-upserts`. Rounds alternate which side runs first, so neither always runs
 * on the other's dead rows (this machine's PostgreSQL has autovacuum off).
 *
 * Besides the throughputs it prints the CPU each side spent per 1,000 items, by process (PostgreSQL,
 * the server, the benchmark's client): when the cores are the limit, the throughput ratio is the
 * ratio of those sums, and the server's share says how much of the gap is its own work.
 *
 * Settings: BENCH_CONTENTION_SECONDS per side and round (default 4), BENCH_CONTENTION_ROUNDS
 * (default 6; after a warm-up round that is not counted), BENCH_PIN_POSTGRES=1 runs PostgreSQL on CPU 0 and the rest on the other CPUs (a
 * production topology: bench/lib/cpu-pinning.ts). The server's settings come from the environment
 * (BATCH_CONCURRENCY=1 DB_POOL_SIZE=3 shows the one-place figure: light batches take up to every
 * connection but two, four per place). BENCH_BASELINE=DIR also runs the build of another checkout
 * (built, the same migrations) on the same database, its service side between the other two of every
 * round, and prints this build against it: the way to weigh a change, since one build's server CPU
 * per item moves by a third from round to round on shared cores. BENCH_BASELINE_NODE_ARGS (even empty)
 * gives the baseline server its own V8 flags: BENCH_BASELINE set to this checkout weighs flags.
 */
import { baselineFromEnv, loadProducts, prepareSides } from './lib/batch-bench.js';
import { type ContentionSide, runContention } from './lib/contention.js';
import { pinPostgresApart } from './lib/cpu-pinning.js';
import type { CpuSplit } from './lib/cpu-time.js';
import { benchMain, describeMachine, envInt } from './lib/options.js';
import { formatTable, median, ratio } from './lib/stats.js';

const SECONDS = envInt('BENCH_CONTENTION_SECONDS', 4, 1, 600);
const ROUNDS = envInt('BENCH_CONTENTION_ROUNDS', 6, 1, 100);
const ITEMS = 1_000;

const perSecond = (s: ContentionSide) => (s.batches * ITEMS) / s.seconds;
const items = (s: ContentionSide) => s.batches * ITEMS;

/** CPU milliseconds per 1,000 items written, by process, and their sum. */
function perThousand(cpu: CpuSplit, written: number) {
  const per = (ms: number) => (ms * 1_000) / written;
  const split = { postgres: per(cpu.postgres), server: per(cpu.server), client: per(cpu.client) };
  return { ...split, total: split.postgres + split.server + split.client };
}

const cpuText = (c: ReturnType<typeof perThousand>) =>
  `${c.total.toFixed(1)} (pg ${c.postgres.toFixed(1)}, server ${c.server.toFixed(1)}, client ${c.client.toFixed(1)})`;

function sum(sides: readonly ContentionSide[]): { cpu: CpuSplit | undefined; written: number } {
  let written = 0;
  let cpu: CpuSplit | undefined = { postgres: 0, server: 0, client: 0 };
  for (const side of sides) {
    written += items(side);
    if (!side.cpu || !cpu) cpu = undefined;
    else {
      cpu.postgres += side.cpu.postgres;
      cpu.server += side.cpu.server;
      cpu.client += side.cpu.client;
    }
  }
  return { cpu, written };
}

async function main(): Promise<void> {
  const pinnedApart = process.env.BENCH_PIN_POSTGRES === '1';
  const pinned = pinnedApart ? await pinPostgresApart() : 'not pinned';
  console.log(
    `concurrent-upserts benchmark ${new Date().toISOString()}: ${await describeMachine(true)}; ${pinned}`,
  );
  const sides = await prepareSides('postgres');
  await loadProducts(sides);
  const baseline = await baselineFromEnv(sides);
  const options = {
    clients: 4,
    seconds: SECONDS,
    batchItems: ITEMS,
    keySpace: ITEMS,
    batchesPerClient: 12,
    disjoint: true,
    baseline: baseline && {
      baseUrl: baseline.server.baseUrl,
      pid: baseline.server.pid,
      ...(baseline.ownDatabase
        ? { own: { headers: baseline.sides.tenant.headers, databaseUrl: baseline.databaseUrl } }
        : {}),
    },
  };
  // Not counted: a first round warms the server (V8 still compiles its hot code for seconds; the
  // first rounds of earlier runs spent up to a third more of the server's CPU
  // per item than the last), as in a service that has been running; `npm run bench` runs W3 after
  // its other workloads, warm already. The raw side's client is this process, warm from the start.
  await runContention(sides, { ...options, seconds: Math.min(SECONDS, 3) });
  const rows: string[][] = [];
  const services: ContentionSide[] = [];
  const raws: ContentionSide[] = [];
  const baselines: ContentionSide[] = [];
  const baselineRows: string[][] = [];
  const cpu = (s: ContentionSide) => (s.cpu ? cpuText(perThousand(s.cpu, items(s))) : '');
  for (let round = 1; round <= ROUNDS; round++) {
    const rawFirst = round % 2 === 0;
    const figures = await runContention(sides, { ...options, rawFirst });
    const sidesRun = [figures.service, figures.raw, ...(figures.baseline ? [figures.baseline] : [])];
    const failed = sidesRun.find((side) => side.errors > 0);
    if (failed) throw new Error(`errors: ${failed.firstError}`);
    services.push(figures.service);
    raws.push(figures.raw);
    if (figures.baseline) {
      baselines.push(figures.baseline);
      baselineRows.push([
        `round ${round}${rawFirst ? ' (baseline first)' : ''}`,
        `${Math.round(perSecond(figures.service)).toLocaleString('en-US')} items/s`,
        `${Math.round(perSecond(figures.baseline)).toLocaleString('en-US')} items/s`,
        ratio(perSecond(figures.service) / perSecond(figures.baseline)),
        cpu(figures.service),
        cpu(figures.baseline),
      ]);
    }
    rows.push([
      `round ${round}${rawFirst ? ' (raw first)' : ''}`,
      `${Math.round(perSecond(figures.service)).toLocaleString('en-US')} items/s`,
      `${Math.round(perSecond(figures.raw)).toLocaleString('en-US')} items/s`,
      ratio(perSecond(figures.service) / perSecond(figures.raw)),
      cpu(figures.service),
      cpu(figures.raw),
    ]);
  }
  const rate = (list: ContentionSide[]) =>
    list.reduce((n, s) => n + items(s), 0) / list.reduce((t, s) => t + s.seconds, 0);
  const roundRatios = services.map((s, at) => perSecond(s) / perSecond(raws[at]!));
  const service = sum(services);
  const raw = sum(raws);
  const serviceCpu = service.cpu ? perThousand(service.cpu, service.written) : undefined;
  const rawCpu = raw.cpu ? perThousand(raw.cpu, raw.written) : undefined;
  rows.push([
    'all rounds',
    `${Math.round(rate(services)).toLocaleString('en-US')} items/s`,
    `${Math.round(rate(raws)).toLocaleString('en-US')} items/s`,
    `${ratio(rate(services) / rate(raws))} (rounds: median ${ratio(median(roundRatios))}; bar 0.85x)`,
    serviceCpu ? cpuText(serviceCpu) : '',
    rawCpu ? cpuText(rawCpu) : '',
  ]);
  console.log(
    `\n${formatTable(
      [
        'W3: 4 concurrent 1,000-item price upserts',
        'service',
        'raw SQL',
        'ratio',
        'service CPU ms per 1,000 items',
        'raw CPU ms per 1,000 items',
      ],
      rows,
      1,
    )}`,
  );
  if (baselines.length > 0) {
    const ours = sum(services);
    const theirs = sum(baselines);
    baselineRows.push([
      'all rounds',
      `${Math.round(rate(services)).toLocaleString('en-US')} items/s`,
      `${Math.round(rate(baselines)).toLocaleString('en-US')} items/s`,
      `${ratio(rate(services) / rate(baselines))} (raw floor: ${ratio(rate(baselines) / rate(raws))})`,
      ours.cpu ? cpuText(perThousand(ours.cpu, ours.written)) : '',
      theirs.cpu ? cpuText(perThousand(theirs.cpu, theirs.written)) : '',
    ]);
    console.log(
      `\n${formatTable(
        [
          'W3: this build against the baseline',
          'this build',
          'baseline',
          'this/baseline',
          'this build: CPU ms per 1,000 items',
          'baseline: CPU ms per 1,000 items',
        ],
        baselineRows,
        1,
      )}`,
    );
  }
  // Pinned, PostgreSQL has a core of its own: the cores are not shared, so CPU per item bounds nothing.
  if (serviceCpu && rawCpu && !pinnedApart) {
    // When the cores are the limit, throughput is inversely proportional to the CPU an item costs
    // all processes together: these two figures bound what the ratio can reach.
    console.log(
      `\nCPU-bound ratio (raw CPU per item / service CPU per item): ${ratio(rawCpu.total / serviceCpu.total)}` +
        `; the server's CPU per 1,000 items that 0.85x allows: ${Math.max(
          0,
          rawCpu.total / 0.85 - serviceCpu.postgres - serviceCpu.client,
        ).toFixed(1)} ms (spent: ${serviceCpu.server.toFixed(1)} ms)`,
    );
  }
}

await benchMain(main);
