/**
 * What the change feed costs a batch write (issue 15: "no more than 10 % slower than before the feed
 * existed"), measured in one run: the service's own write statement (src/sql/batch-write.ts, built
 * from the declarations, its column literals from the service's own check) on two copies of a table
 * that differ only in the feed's index on (tenant_id, change_xid, key). Without that index the
 * change_xid column is still set, as before the feed nothing indexed it: what is left is the cost of
 * the index entry per written row, and, for upserts, of updates that can no longer be HOT.
 *
 * Workloads as in bench:batch: 10,000 stocks of new keys; 10,000 prices of which 5,000 new and 5,000
 * changed. Rounds alternate the two tables. PostgreSQL: one statement; PGlite: the service's chunks of
 * 2,000 rows in one transaction. Run with `npm run bench:feed-cost` (`-- --quick`: fewer rounds).
 */
import { NO_OPTIONS } from '../src/batch/batch-options.js';
import { checkItems } from '../src/batch/process-batch.js';
import { migrate } from '../src/db/migrate.js';
import { PGLITE_STATEMENT_ROWS } from '../src/db/pglite.js';
import { openPostgres } from '../src/db/postgres.js';
import { prices } from '../src/resources/prices.js';
import { stocks } from '../src/resources/stocks.js';
import { buildWriteSql } from '../src/sql/batch-write.js';
import { cleanupAll } from './lib/cleanup.js';
import {
  createPgDatabase,
  createRawTenant,
  type RawClient,
  rawPglite,
  rawPostgres,
} from './lib/databases.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { batchRatio, formatTable, median, ms } from './lib/stats.js';
import { priceItems, priceSeedItems, stockItems } from './lib/workloads.js';

const quick = process.argv.includes('--quick');
const ROUNDS = envInt('BENCH_ROUNDS', quick ? 5 : 15, 1, 50);

type Resource = typeof stocks;
const SIDES = ['without', 'with'] as const;

/**
 * A copy of the resource's table with its columns, defaults and indexes (its feed index dropped for
 * `without`). LIKE copies no foreign key: neither side checks the product reference.
 */
async function copyTable(raw: RawClient, resource: Resource, side: (typeof SIDES)[number]): Promise<string> {
  const copy = `${resource.table}_${side}_feed`;
  await raw.query(`CREATE TABLE ${copy} (LIKE ${resource.table} INCLUDING ALL)`);
  if (side === 'without') {
    const [index] = await raw.query<{ name: string }>(
      "SELECT indexname AS name FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%change_xid%'",
      [copy],
    );
    if (!index) throw new Error(`no feed index on ${copy}`);
    await raw.query(`DROP INDEX ${index.name}`);
  }
  return copy;
}

/** The column literals of the service's check, in statements of at most `rows` rows. */
async function chunksOf(resource: Resource, items: unknown[], rows: number): Promise<string[][]> {
  const checked = await checkItems(resource, items, rows, NO_OPTIONS);
  if (!checked.write) throw new Error(`invalid bench items: ${JSON.stringify(checked.errors.slice(0, 2))}`);
  return checked.write.chunks;
}

/** A new PostgreSQL database with the service's migrations (rawPglite migrates its own). */
async function migratedPostgres(): Promise<RawClient> {
  const url = await createPgDatabase();
  const db = await openPostgres({ connectionString: url, poolSize: 1 });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
  return rawPostgres(url);
}

async function write(raw: RawClient, sql: string, tenant: number, chunks: string[][]): Promise<number> {
  const started = performance.now();
  if (chunks.length > 1) await raw.query('BEGIN');
  for (const columns of chunks) await raw.query(sql, [tenant, ...columns]);
  if (chunks.length > 1) await raw.query('COMMIT');
  return performance.now() - started;
}

async function measure(backend: 'postgres' | 'pglite'): Promise<string[][]> {
  const raw = backend === 'postgres' ? await migratedPostgres() : await rawPglite();
  const rows = backend === 'postgres' ? Number.POSITIVE_INFINITY : PGLITE_STATEMENT_ROWS;
  const tenant = await createRawTenant(raw);
  const statements = new Map<string, string>();
  for (const resource of [stocks, prices]) {
    for (const side of SIDES) {
      const copy = await copyTable(raw, resource, side);
      statements.set(
        `${resource.name} ${side}`,
        buildWriteSql(resource).replaceAll(`"${resource.table}"`, `"${copy}"`),
      );
    }
  }
  const seed = await chunksOf(prices, priceSeedItems(), rows);
  for (const side of SIDES) await write(raw, statements.get(`prices ${side}`)!, tenant, seed);
  const times = new Map<string, number[]>();
  // Round 0 warms the plans and the caches up; it is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    const work: [Resource, string[][]][] = [
      [stocks, await chunksOf(stocks, stockItems(round), rows)],
      [prices, await chunksOf(prices, priceItems(round + 1), rows)],
    ];
    const order = round % 2 === 0 ? [...SIDES] : [...SIDES].reverse();
    for (const [resource, chunks] of work) {
      for (const side of order) {
        const key = `${resource.name} ${side}`;
        const elapsed = await write(raw, statements.get(key)!, tenant, chunks);
        if (round > 0) times.set(key, [...(times.get(key) ?? []), elapsed]);
      }
    }
  }
  await raw.close();
  const label = { stocks: 'stocks 10k new keys', prices: 'prices 10k upsert (5k new, 5k changed)' };
  return [stocks, prices].map((resource) => {
    const without = times.get(`${resource.name} without`)!;
    const withFeed = times.get(`${resource.name} with`)!;
    return [
      label[resource.name as keyof typeof label],
      backend,
      `${ms(median(without))} ms`,
      `${ms(median(withFeed))} ms`,
      `${batchRatio(withFeed, without)} (bound 1.1x)`,
    ];
  });
}

async function main(): Promise<void> {
  console.log(`change feed write cost ${new Date().toISOString()}: ${await describeMachine(true)}`);
  console.log(`  ${ROUNDS} timed rounds after 1 warm-up; load average (1 min) ${load1()}`);
  const lines: string[][] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    try {
      lines.push(...(await measure(backend)));
    } finally {
      await cleanupAll();
    }
  }
  console.log(
    `\n${formatTable(['write statement', 'backend', 'without the feed index', 'with it', 'ratio'], lines, 2)}`,
  );
  console.log(`\nload average (1 min) at end ${load1()}`);
}

await benchMain(main);
