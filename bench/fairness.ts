/**
 * Fairness between tenants (issue 12 item 5): tenant B's small reads while tenant A sends 10,000-item
 * customer batches at a fixed concurrency, on PostgreSQL and PGlite. Run with `npm run bench:fairness`;
 * see bench/README.md. Prints figures, asserts nothing about timings.
 */
import { cleanupAll } from './lib/cleanup.js';
import { type Backend, fairnessTable, type PhaseResult, runFairness } from './lib/fairness.js';
import { benchMain, describeMachine, envInt, envList, load1 } from './lib/options.js';

const BACKENDS = envList<Backend>('BENCH_BACKENDS', ['postgres', 'pglite']);
const SECONDS = envInt('BENCH_FAIR_SECONDS', 6, 1, 120);
const CONCURRENCY = envInt('BENCH_FAIR_CONCURRENCY', 8, 1, 64);
const ITEMS = envInt('BENCH_FAIR_ITEMS', 10_000, 1, 10_000);

async function main(): Promise<void> {
  console.log(
    `fairness benchmark ${new Date().toISOString()}: ${await describeMachine(BACKENDS.includes('postgres'))}; ` +
      `A: ${CONCURRENCY} concurrent ${ITEMS}-customer upserts for ${SECONDS} s a phase`,
  );
  const results: PhaseResult[] = [];
  for (const backend of BACKENDS) {
    try {
      results.push(
        ...(await runFairness(backend, { seconds: SECONDS, concurrency: CONCURRENCY, items: ITEMS })),
      );
    } finally {
      await cleanupAll();
    }
  }
  console.log(`\n${fairnessTable(results)}`);
  console.log(`load average (1 min) at start ${loadAtStart}, at end ${load1()}`);
}

const loadAtStart = load1();
await benchMain(main);
