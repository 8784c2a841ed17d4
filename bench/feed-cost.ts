/**
 * What the change feed costs a batch write (issue 15: "no more than 10 % slower than before the feed
 * existed"), measured in one run, on PostgreSQL and on PGlite. The product writes over HTTP (the
 * production build served by `sfa-backoffice serve`, its schema made by its own migrations); beside
 * it, three floors run the service's write statement (buildWriteSql) raw on copies of the product's
 * table in a tenant of their own, with column arrays built from the same items:
 *
 * - as shipped: the feed's index, no foreign key, the statement counting the inserted rows that name a
 *   missing product (migrations 010 and 011): the work the product's request does, raw;
 * - before the feed: no index on (tenant_id, change_xid, key), the product reference checked by a
 *   foreign key, the statement without its own reference count;
 * - feed + foreign key: the feed's index added (what migration 008 did), the foreign key still there.
 *
 * The copies are `CREATE TABLE ... (LIKE t INCLUDING ALL)` of the served database's tables
 * (PostgreSQL), or of a PGlite directory migrated by `sfa-backoffice migrate` (the server's own
 * directory is its alone while it runs). Rows: the product against the floor as shipped (what the
 * service adds), and the floors as shipped and with the foreign key against the floor before the feed
 * (what the feed adds to the statement; bound 1.1x). Workloads as in bench:batch: 10,000 stocks of new
 * keys; the same 10,000 again (every key exists: nothing written, nothing checked); 10,000 prices of
 * which 5,000 new and 5,000 changed. Each round writes on the four sides in an order that rotates;
 * every write must insert the rows it should, and afterwards (PostgreSQL) the product's rows must be
 * the floor's. PostgreSQL: one statement per floor write; PGlite: the service's chunks of 2,000 rows
 * in one transaction. Run with `npm run bench:feed-cost` (`-- --quick`: fewer rounds).
 */
import { PGLITE_STATEMENT_ROWS } from '../src/db/pglite.js';
import type { BatchResource } from '../src/resources/batch-resource.js';
import { prices } from '../src/resources/prices.js';
import { stocks } from '../src/resources/stocks.js';
import { buildWriteSql } from '../src/sql/batch-write.js';
import {
  type Backend,
  encode,
  expect201,
  loadProducts,
  post,
  prepareSides,
  type Sides,
} from './lib/batch-bench.js';
import { cleanupAll } from './lib/cleanup.js';
import type { RawClient } from './lib/databases.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { batchRatio, formatTable, median, ms } from './lib/stats.js';
import {
  BATCH_ITEMS,
  checkCounts,
  type Expected,
  priceItems,
  priceSeedItems,
  rawStatement,
  rowsDiffering,
  stockItems,
} from './lib/workloads.js';

const quick = process.argv.includes('--quick');
const ROUNDS = envInt('BENCH_ROUNDS', quick ? 5 : 15, 1, 50);

const FLOORS = ['shipped', 'before', 'feedForeignKey'] as const;
type Floor = (typeof FLOORS)[number];
type Side = 'service' | Floor;
const SIDES: readonly Side[] = ['service', ...FLOORS];
const FLOOR_LABELS: Record<Floor, string> = {
  shipped: 'floor as shipped',
  before: 'floor before the feed',
  feedForeignKey: 'floor feed + foreign key',
};
/** The workloads of bench:batch, and what each answers. */
const WORKLOADS = [
  {
    name: 'stocks',
    label: 'stocks 10k new keys',
    resource: stocks,
    expected: { created: BATCH_ITEMS, updated: 0 },
  },
  {
    name: 'stocksAgain',
    label: 'stocks 10k, all keys existing',
    resource: stocks,
    expected: { created: 0, updated: 0 },
  },
  {
    name: 'prices',
    label: 'prices 10k upsert (5k new, 5k changed)',
    resource: prices,
    expected: { created: BATCH_ITEMS / 2, updated: BATCH_ITEMS / 2 },
  },
] as const satisfies readonly { name: string; label: string; resource: BatchResource; expected: Expected }[];

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
async function copyTable(raw: RawClient, resource: BatchResource, floor: Floor): Promise<string> {
  const copy = `${resource.table}_${floor.toLowerCase()}`;
  await raw.query(`CREATE TABLE ${copy} (LIKE ${resource.table} INCLUDING ALL)`);
  if (floor !== 'shipped') {
    await raw.query(
      `ALTER TABLE ${copy} ADD FOREIGN KEY (tenant_id, product_code) REFERENCES products (tenant_id, code)`,
    );
  }
  if (floor === 'before') {
    const [index] = await raw.query<{ name: string }>(
      "SELECT indexname AS name FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%change_xid%'",
      [copy],
    );
    if (!index) throw new Error(`no feed index on ${copy}`);
    await raw.query(`DROP INDEX ${index.name}`);
  }
  return copy;
}

/** A floor's write: its statement over the items' columns, in chunks of `rows` (one transaction). */
async function floorWrite(
  raw: RawClient,
  sql: string,
  resource: BatchResource,
  tenant: number,
  items: readonly Record<string, unknown>[],
  rows: number,
): Promise<{ elapsed: number; created: number }> {
  const chunks: (readonly unknown[])[] = [];
  for (let at = 0; at < items.length; at += rows) {
    chunks.push(rawStatement(resource, tenant, items.slice(at, at + rows)).params);
  }
  const started = performance.now();
  let created = 0;
  const inTransaction = chunks.length > 1;
  if (inTransaction) await raw.query('BEGIN');
  for (const params of chunks) {
    const [row] = await raw.query<{ created: number }>(sql, params);
    created += row?.created ?? 0;
  }
  if (inTransaction) await raw.query('COMMIT');
  return { elapsed: performance.now() - started, created };
}

/** The product's write: one request, its body encoded before the clock starts. */
async function serviceWrite(
  sides: Sides,
  resource: BatchResource,
  items: readonly Record<string, unknown>[],
  expected: Expected,
  what: string,
): Promise<number> {
  const posted = await post(sides, resource.path, encode(items));
  expect201(what, posted);
  checkCounts(what, expected, posted.body);
  return posted.elapsed;
}

async function measure(backend: Backend): Promise<string[][]> {
  const sides = await prepareSides(backend);
  await loadProducts(sides);
  const { raw, rawTenant } = sides;
  const rows = backend === 'postgres' ? Number.POSITIVE_INFINITY : PGLITE_STATEMENT_ROWS;
  const statements = new Map<string, string>();
  const tables = new Map<string, string>();
  for (const resource of [stocks, prices]) {
    for (const floor of FLOORS) {
      const copy = await copyTable(raw, resource, floor);
      const sql = buildWriteSql(resource).replaceAll(`"${resource.table}"`, `"${copy}"`);
      statements.set(`${resource.name} ${floor}`, floor === 'shipped' ? sql : withoutReferenceCount(sql));
      tables.set(`${resource.name} ${floor}`, copy);
    }
  }
  const seed = priceSeedItems();
  await serviceWrite(sides, prices, seed, { created: seed.length, updated: 0 }, 'service prices seed');
  for (const floor of FLOORS) {
    await floorWrite(raw, statements.get(`prices ${floor}`)!, prices, rawTenant, seed, rows);
  }
  const times = new Map<string, number[]>();
  // Round 0 warms the plans and the caches up; it is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    const stockBatch = stockItems(round);
    const work = { stocks: stockBatch, stocksAgain: stockBatch, prices: priceItems(round + 1) } as const;
    for (const workload of WORKLOADS) {
      const items = work[workload.name];
      const { resource, expected } = workload;
      for (let at = 0; at < SIDES.length; at++) {
        const side = SIDES[(at + round) % SIDES.length]!;
        const key = `${workload.name} ${side}`;
        let elapsed: number;
        if (side === 'service') {
          elapsed = await serviceWrite(sides, resource, items, expected, `${key}, round ${round}`);
        } else {
          const sql = statements.get(`${resource.name} ${side}`)!;
          const written = await floorWrite(raw, sql, resource, rawTenant, items, rows);
          if (written.created !== expected.created) {
            throw new Error(
              `${key}, round ${round}: ${written.created} rows inserted, not ${expected.created}`,
            );
          }
          elapsed = written.elapsed;
        }
        if (round > 0) times.set(key, [...(times.get(key) ?? []), elapsed]);
      }
    }
  }
  if (sides.serviceTenantId !== undefined) {
    for (const resource of [stocks, prices]) {
      for (const floor of FLOORS) {
        const differing = await rowsDiffering(raw, resource, [sides.serviceTenantId, rawTenant], {
          second: tables.get(`${resource.name} ${floor}`)!,
        });
        if (differing !== 0) throw new Error(`${resource.name}: ${differing} rows differ from ${floor}`);
      }
    }
  }
  return WORKLOADS.flatMap((workload) => {
    const of = (side: Side) => times.get(`${workload.name} ${side}`)!;
    const service = of('service');
    const shipped = of('shipped');
    const before = of('before');
    return [
      [
        workload.label,
        backend,
        'service (HTTP) / floor as shipped',
        `${ms(median(service))} ms`,
        `${ms(median(shipped))} ms`,
        batchRatio(service, shipped),
      ],
      ...(['shipped', 'feedForeignKey'] as const).map((floor) => [
        workload.label,
        backend,
        `${FLOOR_LABELS[floor]} / ${FLOOR_LABELS.before}`,
        `${ms(median(of(floor)))} ms`,
        `${ms(median(before))} ms`,
        `${batchRatio(of(floor), before)} (bound 1.1x)`,
      ]),
    ];
  });
}

async function main(): Promise<void> {
  console.log(`change feed write cost ${new Date().toISOString()}: ${await describeMachine(true)}`);
  console.log(`  ${ROUNDS} timed rounds after 1 warm-up; load average (1 min) ${load1()}`);
  const lines: string[][] = [];
  for (const backend of ['postgres', 'pglite'] as const) {
    const started = performance.now();
    try {
      lines.push(...(await measure(backend)));
    } finally {
      await cleanupAll();
    }
    console.log(`  ${backend} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  console.log(`\n${formatTable(['write', 'backend', 'sides', 'first', 'second', 'ratio'], lines, 3)}`);
  console.log(`\nload average (1 min) at end ${load1()}`);
}

await benchMain(main);
