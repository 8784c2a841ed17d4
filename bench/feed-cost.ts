/**
 * What the change feed costs a batch write (issue 15: "no more than 10 % slower than before the feed
 * existed"), measured in one run: the service's own write statement (src/sql/batch-write.ts, built
 * from the declarations, its column literals from the service's own check) on three copies of a table:
 *
 * - before the feed: no index on (tenant_id, change_xid, key), the product reference checked by a
 *   foreign key, the statement without its own reference count;
 * - feed + foreign key: the feed's index added (what migration 008 did), so an index entry per written
 *   row and, for upserts, updates that can no longer be HOT;
 * - feed + statement check: as the service writes now (migrations 010 and 011): the feed's index, no
 *   foreign key, the statement counting the inserted rows that name a missing product and failing
 *   whole when there are some (refuse_missing_references).
 *
 * The change_xid column is on every copy (before the feed nothing indexed it). Workloads as in
 * bench:batch: 10,000 stocks of new keys; the same 10,000 again (every key exists: nothing written,
 * nothing checked); 10,000 prices of which 5,000 new and 5,000 changed. Each round
 * writes to the three copies in an order that rotates; every write must insert the rows it should.
 * PostgreSQL: one statement; PGlite: the service's chunks of 2,000 rows in one transaction. Run with
 * `npm run bench:feed-cost` (`-- --quick`: fewer rounds).
 */
import { NO_OPTIONS } from '../src/batch/batch-options.js';
import { checkItems } from '../src/batch/check-block.js';
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
  insertRawProducts,
  type RawClient,
  rawPglite,
  rawPostgres,
} from './lib/databases.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { batchRatio, formatTable, median, ms } from './lib/stats.js';
import {
  BATCH_ITEMS,
  PRODUCT_COUNT,
  priceItems,
  priceSeedItems,
  productCode,
  stockItems,
} from './lib/workloads.js';

const quick = process.argv.includes('--quick');
const ROUNDS = envInt('BENCH_ROUNDS', quick ? 5 : 15, 1, 50);

type Resource = typeof stocks;
const SIDES = ['before', 'feedForeignKey', 'feedChecked'] as const;
type Side = (typeof SIDES)[number];
const SIDE_LABELS: Record<Side, string> = {
  before: 'before the feed',
  feedForeignKey: 'feed + foreign key',
  feedChecked: 'feed + statement check',
};
/** The workloads of bench:batch, and the rows each inserts. */
const WORKLOADS = [
  { name: 'stocks', label: 'stocks 10k new keys', created: BATCH_ITEMS },
  { name: 'stocksAgain', label: 'stocks 10k, all keys existing', created: 0 },
  { name: 'prices', label: 'prices 10k upsert (5k new, 5k changed)', created: BATCH_ITEMS / 2 },
] as const;

/** The statement as it was before migration 010: no reference check (the foreign key checked). */
function withoutReferenceCount(sql: string): string {
  const out = sql
    .replace(/, t\."[a-z_]+" AS reference/, '')
    .replace(
      /,\n {2}refuse_missing_references\(count\(\*\) FILTER \(WHERE w\.inserted AND [^\n]*AS missing/,
      '',
    );
  if (out.includes('missing') || out.includes('reference')) {
    throw new Error(`the reference count is still in:\n${out}`);
  }
  return out;
}

/**
 * A copy of the resource's table with its columns, defaults and indexes (LIKE copies no foreign key):
 * the feed's index dropped for `before`, the foreign key to products added where there was one.
 */
async function copyTable(raw: RawClient, resource: Resource, side: Side): Promise<string> {
  const copy = `${resource.table}_${side.toLowerCase()}`;
  await raw.query(`CREATE TABLE ${copy} (LIKE ${resource.table} INCLUDING ALL)`);
  if (side !== 'feedChecked') {
    await raw.query(
      `ALTER TABLE ${copy} ADD FOREIGN KEY (tenant_id, product_code) REFERENCES products (tenant_id, code)`,
    );
  }
  if (side === 'before') {
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

/** Runs the chunks, in one transaction when several (as the service does); the time and the rows inserted. */
async function write(
  raw: RawClient,
  sql: string,
  tenant: number,
  chunks: string[][],
): Promise<{ elapsed: number; created: number }> {
  const started = performance.now();
  let created = 0;
  const inTransaction = chunks.length > 1;
  if (inTransaction) await raw.query('BEGIN');
  for (const columns of chunks) {
    const [row] = await raw.query<{ created: number }>(sql, [tenant, ...columns]);
    created += row?.created ?? 0;
  }
  if (inTransaction) await raw.query('COMMIT');
  return { elapsed: performance.now() - started, created };
}

async function measure(backend: 'postgres' | 'pglite'): Promise<string[][]> {
  const raw = backend === 'postgres' ? await migratedPostgres() : await rawPglite();
  const rows = backend === 'postgres' ? Number.POSITIVE_INFINITY : PGLITE_STATEMENT_ROWS;
  const tenant = await createRawTenant(raw);
  const codes = Array.from({ length: PRODUCT_COUNT }, (_, at) => productCode(at));
  await insertRawProducts(raw, tenant, codes);
  const statements = new Map<string, string>();
  for (const resource of [stocks, prices]) {
    for (const side of SIDES) {
      const copy = await copyTable(raw, resource, side);
      const sql = buildWriteSql(resource).replaceAll(`"${resource.table}"`, `"${copy}"`);
      statements.set(`${resource.name} ${side}`, side === 'feedChecked' ? sql : withoutReferenceCount(sql));
    }
  }
  const seed = await chunksOf(prices, priceSeedItems(), rows);
  for (const side of SIDES) await write(raw, statements.get(`prices ${side}`)!, tenant, seed);
  const times = new Map<string, number[]>();
  // Round 0 warms the plans and the caches up; it is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    const stockChunks = await chunksOf(stocks, stockItems(round), rows);
    const work = {
      stocks: [stocks, stockChunks],
      stocksAgain: [stocks, stockChunks],
      prices: [prices, await chunksOf(prices, priceItems(round + 1), rows)],
    } as const;
    for (const workload of WORKLOADS) {
      const [resource, chunks] = work[workload.name];
      for (let at = 0; at < SIDES.length; at++) {
        const side = SIDES[(at + round) % SIDES.length]!;
        const { elapsed, created } = await write(raw, statements.get(`${resource.name} ${side}`)!, tenant, [
          ...chunks,
        ]);
        const key = `${workload.name} ${side}`;
        if (created !== workload.created) {
          throw new Error(`${key}, round ${round}: ${created} rows inserted, not ${workload.created}`);
        }
        if (round > 0) times.set(key, [...(times.get(key) ?? []), elapsed]);
      }
    }
  }
  await raw.close();
  return WORKLOADS.flatMap((workload) => {
    const before = times.get(`${workload.name} before`)!;
    return (['feedForeignKey', 'feedChecked'] as const).map((side) => {
      const now = times.get(`${workload.name} ${side}`)!;
      return [
        workload.label,
        backend,
        SIDE_LABELS[side],
        `${ms(median(before))} ms`,
        `${ms(median(now))} ms`,
        `${batchRatio(now, before)} (bound 1.1x)`,
      ];
    });
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
    `\n${formatTable(['write statement', 'backend', 'write', 'before the feed', 'with it', 'ratio'], lines, 3)}`,
  );
  console.log(`\nload average (1 min) at end ${load1()}`);
}

await benchMain(main);
