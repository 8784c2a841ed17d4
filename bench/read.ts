/**
 * Read benchmark (issue 3): GET /v1/customers?limit=1000 and ?limit=100 and
 * GET /v1/deliveries/pending?limit=500 (5 items each) against 100,000 customers and 100,000 deliveries
 * in one tenant, the service over HTTP beside the same statements run raw in-process, on PostgreSQL
 * and on PGlite. Run with `npm run bench:read`; see bench/README.md.
 */
import { cleanupAll } from './lib/cleanup.js';
import { benchMain, describeMachine, envInt, envList, load1 } from './lib/options.js';
import {
  type Backend,
  measureRead,
  prepareReads,
  READ_HEADER,
  type ReadResult,
  type ReadSetup,
  readRows,
  readWorkloads,
} from './lib/reads.js';
import { formatTable } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const ROWS = envInt('BENCH_READ_ROWS', quick ? 20_000 : 100_000, 1_000, 10_000_000);
const ITEMS = 5;
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 4, 1, 64);
/** Timed requests of the limit=1000 and limit=500 pages; the limit=100 page gets three times as many. */
const REQUESTS = envInt('BENCH_READ_REQUESTS', quick ? 60 : 200, 4, 100_000);
const BACKENDS = envList<Backend>('BENCH_BACKENDS', ['postgres', 'pglite']);

async function main(): Promise<void> {
  const started = performance.now();
  console.log(
    `read benchmark ${new Date().toISOString()}${quick ? ' (quick)' : ''}: ${await describeMachine(BACKENDS.includes('postgres'))}`,
  );
  console.log(
    `  ${ROWS} customers and ${ROWS} pending deliveries x ${ITEMS} items in one tenant; concurrency ${CONCURRENCY}; ` +
      `${REQUESTS} timed requests per side (x3 for limit=100) after a warm-up; page 1`,
  );
  const results: ReadResult[] = [];
  for (const backend of BACKENDS) {
    const backendStarted = performance.now();
    let setup: ReadSetup;
    try {
      setup = await prepareReads(
        backend,
        { main: { customers: ROWS, deliveries: ROWS, itemsPerDelivery: ITEMS } },
        CONCURRENCY,
      );
      console.log(`  ${backend}: seeded in ${setup.seedSeconds.main!.toFixed(1)} s`);
      for (const { workload, requests } of readWorkloads(ROWS, ITEMS, REQUESTS)) {
        const result = await measureRead(setup, workload, {
          requests,
          concurrency: CONCURRENCY,
          warmup: Math.max(8, Math.ceil(requests / 10)),
        });
        results.push(result);
        const [row] = readRows([result]);
        console.log(
          `  ${backend} ${workload.label}: service p50 ${row![3]} ms, raw p50 ${row![6]} ms (load ${load1()})`,
        );
      }
    } finally {
      await cleanupAll();
    }
    console.log(`  ${backend} done in ${((performance.now() - backendStarted) / 1000).toFixed(1)} s`);
  }
  console.log(`\n${formatTable(READ_HEADER, readRows(results))}`);
  console.log(
    `\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s; load average (1 min) at start ${loadAtStart}, at end ${load1()}`,
  );
}

const loadAtStart = load1();
await benchMain(main);
