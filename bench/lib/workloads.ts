import { deduplicate } from '../../src/batch/prepared-write.js';
import { validateItems } from '../../src/batch/validate-items.js';
import { loadBatch } from '../../src/batch/write-block.js';
import { arrayLiteral } from '../../src/db/array-literal.js';
import { type Database, inTransaction } from '../../src/db/database.js';
import type { FieldValue } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { prices } from '../../src/resources/prices.js';
import { stocks } from '../../src/resources/stocks.js';
import { buildWriteSql, statementColumns } from '../../src/sql/batch-write.js';

/** Products in the master; every stocks round covers all of them, every prices round half of them. */
export const PRODUCT_COUNT = 10_000;
export const BATCH_ITEMS = 10_000;
const PRICED_PRODUCTS = BATCH_ITEMS / 2;

export const productCode = (at: number) => `P${String(at).padStart(6, '0')}`;

export function productItems(): Record<string, unknown>[] {
  return Array.from({ length: PRODUCT_COUNT }, (_, at) => ({
    code: productCode(at),
    description: `Benchmark product ${at}`,
    unit: 'UND',
    tax: 19,
    state: 'Y',
  }));
}

/** 10,000 new keys: every product at a location that no earlier round used. */
export function stockItems(round: number): Record<string, unknown>[] {
  return Array.from({ length: BATCH_ITEMS }, (_, at) => ({
    product_code: productCode(at),
    location: `W${round}`,
    quantity: (((at * 37) % 100_000) + round * 100) / 100,
    factor_description: 'UND',
  }));
}

function price(at: number, list: number, round: number): Record<string, unknown> {
  const cents = 1_000 + ((at * 131) % 90_000) + list * 7 + round;
  return {
    product_code: productCode(at),
    price_list: `L${list}`,
    price: cents / 100,
    maximum_discount: 10,
    maximum_discount2: '5.5',
    base_price: (cents + 100) / 100,
    minimum_price: (cents - 500) / 100,
    maximum_price: (cents + 5_000) / 100,
    factor_description: 'UND',
  };
}

/** Round 0: the 5,000 keys of list L0, so that round 1 finds half of its keys existing. */
export function priceSeedItems(): Record<string, unknown>[] {
  return Array.from({ length: PRICED_PRODUCTS }, (_, at) => price(at, 0, 0));
}

/**
 * Round r >= 1: 5,000 new keys (list Lr) and the 5,000 keys of list L(r-1), which round r-1 created,
 * with a changed price, interleaved.
 */
export function priceItems(round: number): Record<string, unknown>[] {
  if (round < 1) throw new Error('price rounds start at 1');
  const items: Record<string, unknown>[] = [];
  for (let at = 0; at < PRICED_PRODUCTS; at++) {
    items.push(price(at, round - 1, round), price(at, round, round));
  }
  return items;
}

export interface Expected {
  created: number;
  updated: number;
}

export const expectStocks: Expected = { created: BATCH_ITEMS, updated: 0 };
export const expectPrices: Expected = { created: BATCH_ITEMS / 2, updated: BATCH_ITEMS / 2 };

/** Rows a workload leaves in a tenant after `rounds` rounds (warm-up included), checked with SQL. */
export interface RowCheck {
  /** Condition on the workload's table besides the tenant. */
  where: string;
  rows: number;
  /** Rows with updated_at set (prices) or 0 where the table has none. */
  updated: number;
}

export interface Workload {
  readonly name: 'stocks' | 'stocks-existing' | 'prices';
  readonly label: string;
  readonly resource: BatchResource;
  /** Items of round r (r >= 1); round 1 is the warm-up. */
  items(round: number): Record<string, unknown>[];
  /** Untimed rows written before round 1, if the workload needs existing keys. */
  seed?(): Record<string, unknown>[];
  readonly expected: Expected;
  check(rounds: number): RowCheck;
}

/** The 10,000 keys of location EXISTING, with a quantity that changes every round. */
function existingStockItems(round: number): Record<string, unknown>[] {
  return Array.from({ length: BATCH_ITEMS }, (_, at) => ({
    product_code: productCode(at),
    location: 'EXISTING',
    quantity: (((at * 53) % 100_000) + round * 100) / 100,
    factor_description: 'UND',
  }));
}

export const workloads: readonly Workload[] = [
  {
    name: 'stocks',
    label: 'stocks 10k new keys',
    resource: stocks,
    items: stockItems,
    expected: expectStocks,
    check: (rounds) => ({ where: "location LIKE 'W%'", rows: BATCH_ITEMS * rounds, updated: 0 }),
  },
  {
    // Stocks are insert-if-absent: every item of these rounds is ignored (created 0).
    name: 'stocks-existing',
    label: 'stocks 10k, all keys existing',
    resource: stocks,
    items: existingStockItems,
    seed: () => existingStockItems(0),
    expected: { created: 0, updated: 0 },
    check: () => ({ where: "location = 'EXISTING'", rows: BATCH_ITEMS, updated: 0 }),
  },
  {
    name: 'prices',
    label: 'prices 10k upsert (5k new, 5k changed)',
    resource: prices,
    items: priceItems,
    seed: priceSeedItems,
    expected: expectPrices,
    check: (rounds) => ({
      where: 'true',
      rows: (BATCH_ITEMS / 2) * (rounds + 1),
      updated: (BATCH_ITEMS / 2) * rounds,
    }),
  },
];

export interface RawStatement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/**
 * The statement and parameters the service would send for these items: validated and turned into
 * column arrays by the service's own code, captured instead of sent. The text is checked to be
 * buildWriteSql(resource), the statement the raw side promises to run.
 */
export async function rawStatement(
  resource: BatchResource,
  tenantId: number,
  items: readonly unknown[],
): Promise<RawStatement> {
  const batch = validateItems(resource, items);
  if (batch.errors.length > 0) {
    throw new Error(`benchmark items invalid: ${JSON.stringify(batch.errors.slice(0, 2))}`);
  }
  let captured: RawStatement | undefined;
  const capture: Database = {
    backend: 'postgres',
    sharedByProcesses: true,
    poolStats: () => ({ max: 1, total: 1 }),
    upkeepStats: () => ({ runs: 0, seconds: 0 }),
    async query<Row>(sql: string, params?: readonly unknown[]) {
      captured = { sql, params: params ?? [] };
      return [{ created: 0 }] as Row[];
    },
    async exec() {},
    statementRows: Number.POSITIVE_INFINITY,
    async wrote() {},
    transaction: (work) => work(inTransaction(capture)),
    async close() {},
  };
  const rows = batch.rows as FieldValue[][];
  // The service's own pipeline, as the command line and demo data run it.
  await loadBatch(capture, tenantId, resource, items);
  if (!captured) throw new Error('loadBatch sent no statement');
  if (captured.sql !== buildWriteSql(resource)) throw new Error('loadBatch sent another statement');
  // The raw side sends the same rows as JavaScript arrays, serialised by the driver, as a program
  // writing raw SQL would; the service writes the array literals itself (src/db/array-literal.ts).
  // A column no row has a value for goes empty on both sides (columnLiteral, src/sql/batch-write.ts):
  // the statement's unnest pads it with NULLs, so the database does the same work for both.
  const columns = statementColumns(resource, deduplicate(resource, rows)).map((column) =>
    column.every((value) => value === null) ? [] : column,
  );
  const literals = columns.map(arrayLiteral);
  if (literals.some((literal, at) => literal !== captured!.params[at + 1])) {
    throw new Error('loadBatch sent other rows');
  }
  return { sql: captured.sql, params: [tenantId, ...columns] };
}

export function checkCounts(what: string, expected: Expected, got: Partial<Expected>): void {
  if (got.created !== expected.created || (got.updated ?? 0) !== expected.updated) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`);
  }
}
