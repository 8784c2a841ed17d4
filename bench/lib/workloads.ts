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
 * The floor of a batch: the statement the service sends for these items (buildWriteSql, the service's
 * own SQL builder) with its parameters built here from the items, as a program writing raw SQL would
 * build them: one JavaScript array per column in the statement's order, serialised by the driver. No
 * part of the service's request pipeline (its check, its literals) runs on this side; that both sides
 * wrote the same rows is checked on the tables afterwards (sameRows). The benchmark's items are valid
 * and have distinct keys, and have no children (stocks, prices), so nothing is left to check or merge.
 * A column no item gives goes empty, as the service sends it: the statement's unnest pads it with NULLs.
 */
export function rawStatement(
  resource: BatchResource,
  tenantId: number,
  items: readonly unknown[],
): RawStatement {
  if (resource.childPosition !== undefined) throw new Error(`${resource.name}: the floor writes no children`);
  const rows = (items as Record<string, FieldValue | undefined>[]).map((item) =>
    resource.fieldNames.map((name) => item[name] ?? null),
  );
  const columns = statementColumns(resource, rows).map((column) =>
    column.every((value) => value === null) ? [] : column,
  );
  return { sql: buildWriteSql(resource), params: [tenantId, ...columns] };
}

/**
 * Rows of `resource` that one tenant holds and the other does not, in either direction, comparing
 * every column a batch sends: 0 when the service (over HTTP) and the floor wrote the same rows. The
 * second tenant's rows may be in a copy of the table (`second`).
 */
export async function rowsDiffering(
  raw: { query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]> },
  resource: BatchResource,
  tenants: readonly [number, number],
  tables: { second?: string } = {},
): Promise<number> {
  const columns = resource.columnPositions.map((at) => `"${resource.fieldNames[at]}"`).join(', ');
  const of = (n: 1 | 2) =>
    `SELECT ${columns} FROM "${n === 2 ? (tables.second ?? resource.table) : resource.table}" WHERE tenant_id = $${n}`;
  const [row] = await raw.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ((${of(1)} EXCEPT ALL ${of(2)}) UNION ALL (${of(2)} EXCEPT ALL ${of(1)})) d`,
    tenants,
  );
  return row!.n;
}

export function checkCounts(what: string, expected: Expected, got: Partial<Expected>): void {
  if (got.created !== expected.created || (got.updated ?? 0) !== expected.updated) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`);
  }
}
