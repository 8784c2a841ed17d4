/**
 * Batch write benchmark: the service end to end over HTTP vs. the same statement sent raw, on
 * PostgreSQL and on embedded PGlite. Run with `npm run bench:batch`; see bench/README.md.
 */
import { type Backend, type BatchResult, batchReport, runBatchBackend } from './lib/batch-bench.js';
import { cleanupAll } from './lib/cleanup.js';
import { benchMain, describeMachine, envInt, envList, load1 } from './lib/options.js';
import { workloads } from './lib/workloads.js';

/** Timed rounds per workload and backend, after one warm-up round. */
const ROUNDS = envInt('BENCH_ROUNDS', 15, 1, 30);
const BACKENDS = envList<Backend>('BENCH_BACKENDS', ['postgres', 'pglite']);
const WORKLOADS = envList('BENCH_WORKLOADS', ['stocks', 'stocks-existing', 'prices'] as const).map(
  (name) => workloads.find((w) => w.name === name)!,
);

async function main(): Promise<void> {
  console.log(
    `batch benchmark ${new Date().toISOString()}: ${await describeMachine(BACKENDS.includes('postgres'))}; ` +
      `${ROUNDS} timed rounds after 1 warm-up, median reported`,
  );
  const results: BatchResult[] = [];
  for (const backend of BACKENDS) {
    const started = performance.now();
    try {
      results.push(
        ...(await runBatchBackend(backend, {
          rounds: ROUNDS,
          workloads: WORKLOADS,
          cpuProfDir: process.env.BENCH_CPU_PROF,
        })),
      );
    } finally {
      // Stop this backend's server and drop its database before the next backend runs.
      await cleanupAll();
    }
    console.log(`  ${backend} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  console.log(`\n${batchReport(results)}`);
  // Other work on the machine shows up directly in the figures: say how busy it was.
  console.log(`load average (1 min) at start ${loadAtStart}, at end ${load1()}`);
}

const loadAtStart = load1();
await benchMain(main);
