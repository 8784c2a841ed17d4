/**
 * The first reads after a bulk load through the API (npm run bench:first-read): customers uploaded
 * into a fresh database, then GET /v1/customers?limit=100 at once, against the same request after the
 * table was analysed from outside. On PostgreSQL and PGlite; `npm run bench` has the same rows.
 */
import { cleanupAll } from './lib/cleanup.js';
import { firstReadLines, measureFirstRead } from './lib/first-read.js';
import { benchMain, describeMachine, envInt } from './lib/options.js';
import { formatTable } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const CUSTOMERS = envInt('BENCH_FIRST_READ_ROWS', quick ? 20_000 : 100_000, 10_000, 10_000_000);

async function main(): Promise<void> {
  console.log(`first-read benchmark ${new Date().toISOString()}: ${await describeMachine(true)}`);
  try {
    const results = [];
    for (const backend of ['postgres', 'pglite'] as const)
      results.push(await measureFirstRead(backend, CUSTOMERS));
    console.log(`\n${formatTable(['workload', 'service', 'analysed', 'ratio'], firstReadLines(results), 1)}`);
  } finally {
    await cleanupAll();
  }
}

await benchMain(main);
