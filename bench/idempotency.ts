/**
 * Retry-safe writes benchmark (extensions.md 8, 9; bench/lib/idempotency.ts): a 10,000-item batch
 * with an Idempotency-Key, its replay, outcomes=true and dry_run=true, each beside the plain batch,
 * on PostgreSQL and PGlite. Run with `npm run bench:idempotency` (`-- --quick`: fewer rounds); its
 * rows are part of `npm run bench` too.
 */
import { cleanupAll } from './lib/cleanup.js';
import { type IdempotencyResult, idempotencyLines, runIdempotencyBench } from './lib/idempotency.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { formatTable } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const ROUNDS = envInt('BENCH_ROUNDS', quick ? 3 : 9, 1, 30);

async function main(): Promise<void> {
  console.log(`retry-safe writes benchmark ${new Date().toISOString()}: ${await describeMachine(true)}`);
  console.log(`  ${ROUNDS} timed rounds after 1 warm-up; load average (1 min) ${load1()}`);
  const results: IdempotencyResult[] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    try {
      results.push(await runIdempotencyBench(backend, ROUNDS));
    } finally {
      await cleanupAll();
    }
  }
  console.log(
    `\n${formatTable(['workload', 'median', 'compared with', 'ratio'], idempotencyLines(results), 1)}`,
  );
  // Every sample, in round order, as observed and less its upkeep: PGlite's upkeep shows as single
  // slow writes in the first.
  for (const { backend, samples, observed } of results) {
    for (const variant of Object.keys(samples) as (keyof typeof samples)[]) {
      const seen = observed[variant].map((v) => v.toFixed(0)).join(' ');
      console.log(
        `${backend} ${variant}: ${seen} | less upkeep ${samples[variant].map((v) => v.toFixed(0)).join(' ')}`,
      );
    }
  }
  console.log(`\nload average (1 min) at end ${load1()}`);
}

await benchMain(main);
