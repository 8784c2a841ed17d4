/**
 * Issue 20's W3 on its own: one tenant's four concurrent 1,000-item price upserts, each writer on keys
 * of its own, against the raw floor (the same statements on four connections), PostgreSQL. Three
 * rounds of service-then-raw, so neither side always runs on the other's leftovers (dead rows,
 * autovacuum). `npm run bench:concurrent-upserts`; BENCH_CONTENTION_SECONDS per side and round
 * (default 5). The server's settings come from the environment (BATCH_CONCURRENCY=1 shows the
 * one-place figure).
 */
import { loadProducts, prepareSides } from './lib/batch-bench.js';
import { type ContentionSide, runContention } from './lib/contention.js';
import { benchMain, describeMachine, envInt } from './lib/options.js';
import { formatTable, ratio } from './lib/stats.js';

const SECONDS = envInt('BENCH_CONTENTION_SECONDS', 5, 1, 600);
const ROUNDS = 3;

async function main(): Promise<void> {
  console.log(`concurrent-upserts benchmark ${new Date().toISOString()}: ${await describeMachine(true)}`);
  const sides = await prepareSides('postgres');
  await loadProducts(sides);
  const perSecond = (s: ContentionSide) => (s.batches * 1_000) / s.seconds;
  const rows: string[][] = [];
  let service = 0;
  let raw = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const figures = await runContention(sides, {
      clients: 4,
      seconds: SECONDS,
      batchItems: 1_000,
      keySpace: 1_000,
      batchesPerClient: 12,
      disjoint: true,
    });
    const errors = figures.service.errors + figures.raw.errors;
    if (errors > 0) throw new Error(`errors: ${figures.service.firstError ?? figures.raw.firstError}`);
    service += perSecond(figures.service);
    raw += perSecond(figures.raw);
    rows.push([
      `round ${round}`,
      `${Math.round(perSecond(figures.service)).toLocaleString('en-US')} items/s`,
      `${Math.round(perSecond(figures.raw)).toLocaleString('en-US')} items/s`,
      ratio(perSecond(figures.service) / perSecond(figures.raw)),
    ]);
  }
  rows.push(['all rounds', '', '', `${ratio(service / raw)} of the raw floor (bar 0.85x)`]);
  console.log(
    `\n${formatTable(['W3: 4 concurrent 1,000-item price upserts', 'service', 'raw SQL', 'ratio'], rows, 1)}`,
  );
}

await benchMain(main);
