/**
 * Every row of issue 4's table in one run: batch writes (service vs. raw SQL, PostgreSQL and PGlite),
 * four concurrent writers on overlapping keys, the server's memory, and the read pages at scale
 * (1,000,000 customers and deliveries; 100,000 with --quick). Prints one table: workload, service
 * figure, raw SQL figure, ratio. Run with `npm run bench` or `npm run bench -- --quick`; see
 * bench/README.md.
 */
import {
  type Backend,
  type BatchResult,
  batchReport,
  loadProducts,
  prepareSides,
  runBatchWorkloads,
} from './lib/batch-bench.js';
import { cleanupAll } from './lib/cleanup.js';
import { type ContentionSide, runContention } from './lib/contention.js';
import { type EmbeddedMemory, embeddedMemoryLines, measureEmbeddedMemory } from './lib/embedded-memory.js';
import { type FirstRead, firstReadLines, measureFirstRead } from './lib/first-read.js';
import { type IdempotencyResult, idempotencyLines, runIdempotencyBench } from './lib/idempotency.js';
import { summary } from './lib/load.js';
import { type BatchMemory, batchMemory, idleRss } from './lib/memory.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import {
  explainRead,
  type FilteredWalk,
  measureFilteredWalk,
  measureRead,
  prepareReads,
  READ_HEADER,
  type ReadResult,
  type ReadWorkload,
  readRows,
} from './lib/reads.js';
import { batchRatio, formatTable, mb, median, ms, ratio } from './lib/stats.js';
import { workloads } from './lib/workloads.js';

const quick = process.argv.includes('--quick');
const explain = process.argv.includes('--explain');
const ROUNDS = envInt('BENCH_ROUNDS', quick ? 3 : 15, 1, 30);
const CONTENTION_SECONDS = envInt('BENCH_CONTENTION_SECONDS', quick ? 6 : 30, 1, 600);
/** Customers and deliveries of the large tenant; the small one has 10,000 customers. */
const LARGE = envInt('BENCH_LARGE_ROWS', quick ? 100_000 : 1_000_000, 10_000, 10_000_000);
const SMALL = 10_000;
/** Customers uploaded through the API before the first reads are timed. */
const FIRST_READ_ROWS = envInt('BENCH_FIRST_READ_ROWS', quick ? 20_000 : 100_000, 10_000, 10_000_000);
const ITEMS = 5;
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 4, 1, 64);
/** Timed requests per side for the large pages; the limit=100 pages get three times as many. */
const READ_REQUESTS = envInt('BENCH_READ_REQUESTS', quick ? 40 : 150, 4, 100_000);

/** One line of the final table. */
type Line = [workload: string, service: string, raw: string, ratio: string];

const thousands = (n: number) => n.toLocaleString('en-US');
const byName = (name: string) => workloads.find((w) => w.name === name)!;

interface WriteFigures {
  batches: BatchResult[];
  idleKb: number;
  idleAfterKb: number;
  memory: BatchMemory[];
  contention?: { service: ContentionSide; raw: ContentionSide };
  /** W3: one tenant's four concurrent upserts on keys of their own. */
  concurrentUpserts?: { service: ContentionSide; raw: ContentionSide };
}

/** Batch workloads, memory and (PostgreSQL) contention on one server of a backend. */
async function writes(backend: Backend): Promise<WriteFigures> {
  const started = performance.now();
  try {
    const sides = await prepareSides(backend);
    const idleKb = await idleRss(sides.server.pid);
    const memory = await batchMemory(sides);
    await loadProducts(sides);
    // --quick runs only the stocks batch on PGlite: it is what the PGlite/PostgreSQL row compares.
    const names = backend === 'pglite' && quick ? ['stocks'] : ['stocks', 'stocks-existing', 'prices'];
    const batches = await runBatchWorkloads(sides, { rounds: ROUNDS, workloads: names.map(byName) });
    let contention: WriteFigures['contention'];
    let concurrentUpserts: WriteFigures['concurrentUpserts'];
    if (backend === 'postgres') {
      console.log(`  postgres: ${CONTENTION_SECONDS} s of 4 concurrent writers, service then raw`);
      contention = await runContention(sides, {
        clients: 4,
        seconds: CONTENTION_SECONDS,
        batchItems: 1_000,
        keySpace: 1_500,
        batchesPerClient: 12,
      });
      console.log(
        `  postgres: ${CONTENTION_SECONDS} s of 4 concurrent writers on keys of their own, service then raw`,
      );
      concurrentUpserts = await runContention(sides, {
        clients: 4,
        seconds: CONTENTION_SECONDS,
        batchItems: 1_000,
        keySpace: 1_000,
        batchesPerClient: 12,
        disjoint: true,
      });
    }
    const idleAfterKb = await idleRss(sides.server.pid, 3_000);
    return { batches, idleKb, idleAfterKb, memory, contention, concurrentUpserts };
  } finally {
    await cleanupAll();
    console.log(`  ${backend} writes done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

interface ReadFigures {
  results: ReadResult[];
  walk: FilteredWalk;
  seedSeconds: Record<string, number>;
  explains: string[];
}

/** The read rows at scale, on PostgreSQL: a large tenant and a small one in the same database. */
async function reads(): Promise<ReadFigures> {
  const started = performance.now();
  try {
    const setup = await prepareReads(
      'postgres',
      {
        large: { customers: LARGE, deliveries: LARGE, itemsPerDelivery: ITEMS },
        small: { customers: SMALL, deliveries: 0, itemsPerDelivery: ITEMS },
      },
      CONCURRENCY,
    );
    const list: { workload: ReadWorkload; requests: number }[] = [
      {
        workload: {
          label: `GET /v1/customers?limit=1000, ${thousands(LARGE)} customers`,
          path: '/v1/customers?limit=1000',
          tenant: 'large',
          total: LARGE,
          items: 1000,
        },
        requests: READ_REQUESTS,
      },
      {
        workload: {
          label: `GET /v1/customers?limit=100 page 1, ${thousands(SMALL)} customers`,
          path: '/v1/customers?limit=100',
          tenant: 'small',
          total: SMALL,
          items: 100,
        },
        requests: READ_REQUESTS * 3,
      },
      {
        workload: {
          label: `GET /v1/customers?limit=100 page 1, ${thousands(LARGE)} customers`,
          path: '/v1/customers?limit=100',
          tenant: 'large',
          total: LARGE,
          items: 100,
        },
        requests: READ_REQUESTS * 3,
      },
      {
        workload: {
          label: `GET /v1/deliveries/pending?limit=500 (${ITEMS} items each), ${thousands(LARGE)} deliveries`,
          path: '/v1/deliveries/pending?limit=500',
          tenant: 'large',
          total: LARGE,
          items: 500,
        },
        requests: READ_REQUESTS,
      },
    ];
    const results: ReadResult[] = [];
    const explains: string[] = [];
    for (const { workload, requests } of list) {
      const result = await measureRead(setup, workload, {
        requests,
        concurrency: CONCURRENCY,
        warmup: Math.max(8, Math.ceil(requests / 10)),
      });
      results.push(result);
      const [row] = readRows([result]);
      console.log(`  ${workload.label}: service p50 ${row![3]} ms, raw p50 ${row![6]} ms (load ${load1()})`);
      if (explain) explains.push(`-- ${workload.label}\n${await explainRead(setup, workload)}`);
    }
    const walk = await measureFilteredWalk(setup, quick ? 10 : 30);
    console.log(
      `  ${walk.label}: counted p50 ${ms(median(walk.counted))} ms, kept p50 ${ms(median(walk.kept))} ms`,
    );
    return { results, walk, seedSeconds: setup.seedSeconds, explains };
  } finally {
    await cleanupAll();
    console.log(`  reads done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

function batchLines(figures: Partial<Record<Backend, WriteFigures>>): Line[] {
  const lines: Line[] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    for (const r of figures[backend]?.batches ?? []) {
      const service = median(r.service);
      const raw = median(r.raw);
      lines.push([
        `${r.workload.label} (${backend})`,
        `${ms(service)} ms`,
        `${ms(raw)} ms`,
        batchRatio(r.service, r.raw),
      ]);
    }
  }
  const stocksOf = (backend: Backend) => figures[backend]?.batches.find((r) => r.workload.name === 'stocks');
  const lite = stocksOf('pglite');
  const postgres = stocksOf('postgres');
  if (lite && postgres) {
    lines.push([
      '10,000-item stocks batch: PGlite / PostgreSQL',
      `${ms(median(lite.service))} / ${ms(median(postgres.service))} ms`,
      `${ms(median(lite.raw))} / ${ms(median(postgres.raw))} ms`,
      ratio(median(lite.service) / median(postgres.service)),
    ]);
  }
  const side = (s: ContentionSide) =>
    `${s.errors} errors, ${s.deadlocks} deadlocks, ${s.batches} batches (${(s.batches / s.seconds).toFixed(1)}/s)`;
  const upserts = figures.postgres?.concurrentUpserts;
  if (upserts) {
    const itemsPerSecond = (s: ContentionSide) => (s.batches * 1_000) / s.seconds;
    lines.push([
      `W3: one tenant's 4 concurrent 1,000-item price upserts, keys of their own, ${CONTENTION_SECONDS} s (postgres)`,
      `${side(upserts.service)}, ${Math.round(itemsPerSecond(upserts.service)).toLocaleString('en-US')} items/s`,
      `${side(upserts.raw)}, ${Math.round(itemsPerSecond(upserts.raw)).toLocaleString('en-US')} items/s`,
      `${ratio(itemsPerSecond(upserts.service) / itemsPerSecond(upserts.raw))} of the raw floor (bar 0.85x)`,
    ]);
  }
  const contention = figures.postgres?.contention;
  if (contention) {
    lines.push([
      `4 clients, 1,000-item price batches, overlapping keys, ${CONTENTION_SECONDS} s (postgres)`,
      side(contention.service),
      side(contention.raw),
      `${ratio(contention.raw.batches / contention.raw.seconds / (contention.service.batches / contention.service.seconds))} per batch`,
    ]);
  }
  for (const backend of ['postgres', 'pglite'] as const) {
    const f = figures[backend];
    if (!f) continue;
    lines.push([`memory: server idle after start (${backend})`, `RSS ${mb(f.idleKb)}`, '-', '-']);
    for (const m of f.memory) {
      lines.push([
        `memory: peak during one batch of ${m.label} (${backend})`,
        `${mb(m.peakKb)} (+${mb(m.peakKb - m.beforeKb)}${m.resetWorked ? '' : ', peak since start'})`,
        `body ${(m.bodyBytes / 1024 / 1024).toFixed(1)} MB`,
        '-',
      ]);
    }
    lines.push([
      `memory: idle after the write benchmarks (${backend})`,
      `RSS ${mb(f.idleAfterKb)}`,
      '-',
      '-',
    ]);
  }
  return lines;
}

function readLines(results: readonly ReadResult[]): Line[] {
  const lines: Line[] = [];
  const side = (p50: number, p99: number, rps: number) =>
    `p50 ${ms(p50)} ms, p99 ${ms(p99)} ms, ${rps.toFixed(0)}/s`;
  for (const r of results) {
    const s = summary(r.service);
    const w = summary(r.raw);
    lines.push([
      r.workload.label,
      side(s.p50, s.p99, s.rps),
      side(w.p50, w.p99, w.rps),
      ratio(s.p50 / w.p50),
    ]);
  }
  const small = results.find((r) => r.workload.tenant === 'small');
  const large = results.find(
    (r) => r.workload.tenant === 'large' && r.workload.path === small?.workload.path,
  );
  if (small && large) {
    const growth = (a: ReturnType<typeof summary>, b: ReturnType<typeof summary>) =>
      `${ms(a.p50)} -> ${ms(b.p50)} ms = ${ratio(b.p50 / a.p50)}`;
    lines.push([
      `GET /v1/customers?limit=100 page 1: p50 at ${thousands(LARGE)} / at ${thousands(SMALL)}`,
      growth(summary(small.service), summary(large.service)),
      growth(summary(small.raw), summary(large.raw)),
      ratio(summary(large.service).p50 / summary(small.service).p50),
    ]);
  }
  return lines;
}

/** The filtered walk: service only, the total counted against the total kept (lib/reads.ts). */
function walkLine(walk: FilteredWalk): Line {
  const counted = median(walk.counted);
  const kept = median(walk.kept);
  return [
    `${walk.label}: total counted / total kept`,
    `p50 ${ms(counted)} / ${ms(kept)} ms`,
    '-',
    `${ratio(kept / counted)} of the cost`,
  ];
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(
    `benchmark ${new Date().toISOString()}${quick ? ' (--quick)' : ''}: ${await describeMachine(true)}`,
  );
  console.log(
    `  batches: ${ROUNDS} timed rounds after 1 warm-up; contention ${CONTENTION_SECONDS} s per side; reads: ` +
      `${thousands(LARGE)} customers and deliveries x ${ITEMS} items, concurrency ${CONCURRENCY}, ` +
      `${READ_REQUESTS} timed requests per side (x3 for limit=100)`,
  );
  const figures: Partial<Record<Backend, WriteFigures>> = {};
  for (const backend of ['postgres', 'pglite'] as const) figures[backend] = await writes(backend);
  // Retry-safe writes (extensions.md 8, 9): keyed, replayed, outcomes and dry-run batches.
  const retrySafe: IdempotencyResult[] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    try {
      retrySafe.push(await runIdempotencyBench(backend, ROUNDS));
    } finally {
      await cleanupAll();
    }
  }
  const read = await reads();
  const firstReads: FirstRead[] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    try {
      firstReads.push(await measureFirstRead(backend, FIRST_READ_ROWS));
    } finally {
      await cleanupAll();
    }
  }

  // The zero-setup default as `npm start` runs it: memory and first start (issue 20).
  let embedded: EmbeddedMemory;
  try {
    embedded = await measureEmbeddedMemory();
  } finally {
    await cleanupAll();
  }

  console.log(`\n${batchReport([...(figures.postgres?.batches ?? []), ...(figures.pglite?.batches ?? [])])}`);
  console.log(`\n${formatTable(READ_HEADER, readRows(read.results))}`);
  for (const [tenant, seconds] of Object.entries(read.seedSeconds)) {
    console.log(`seeding tenant ${tenant} (sfa-backoffice seed): ${seconds.toFixed(1)} s`);
  }
  if (read.explains.length > 0) console.log(`\n${read.explains.join('\n\n')}`);
  console.log(
    `\n${formatTable(['workload', 'service', 'raw SQL', 'ratio'], [...batchLines(figures), ...readLines(read.results), walkLine(read.walk), ...firstReadLines(firstReads)], 1)}`,
  );
  console.log(
    `\n${formatTable(['retry-safe writes', 'median', 'compared with', 'ratio'], idempotencyLines(retrySafe), 1)}`,
  );
  console.log(
    `\n${formatTable(['embedded default', 'figure', 'bar', ''], embeddedMemoryLines(embedded), 1)}`,
  );
  console.log(
    `\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s; load average (1 min) at start ${loadAtStart}, at end ${load1()}`,
  );
}

const loadAtStart = load1();
await benchMain(main);
