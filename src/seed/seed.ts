import { loadBatch } from '../batch/write-block.js';
import type { Database } from '../db/database.js';
import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { customers } from '../resources/customers.js';
import { deliveries, MAX_DELIVERY_ITEMS } from '../resources/deliveries.js';
import { generateCustomers, generateDeliveries } from './generate.js';

export interface SeedOptions {
  customers: number;
  deliveries: number;
  /** Item lines per delivery (0 to 1,000); default 5. */
  itemsPerDelivery?: number;
  /** Seed of the data set: the same seed gives the same rows. Default 1. */
  seed?: number;
  /** Items per loadBatch call (1 to 10,000); default 10,000. */
  chunk?: number;
  /** Called after every chunk. */
  onProgress?: (progress: SeedProgress) => void;
}

export interface SeedProgress {
  phase: 'customers' | 'deliveries';
  done: number;
  total: number;
}

/** The batch pipeline's counts, summed: customers "updated" are the codes that already existed. */
export interface SeedResult {
  customers: { created: number; updated: number };
  deliveries: { created: number; ignored: number };
}

export const DEFAULT_ITEMS_PER_DELIVERY = 5;
/** The most of either kind one seed call loads. */
export const MAX_SEED_ROWS = 100_000_000;

function checkCount(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new Error(`${name} must be a whole number from 0 to ${max}, got ${value}`);
  }
}

/**
 * Loads a generated data set into a tenant through the batch pipeline (loadBatch: the same
 * validation and the same write statement as POST /api/.../batch-create), in chunks of at most
 * 10,000 items. Customers first, then deliveries referring to them. Running it again with the same
 * seed changes nothing (customers upsert unchanged values, existing deliveries are ignored); a larger
 * count adds the rows after the existing ones.
 */
export async function seedTenant(db: Database, tenantId: number, options: SeedOptions): Promise<SeedResult> {
  const itemsPerDelivery = options.itemsPerDelivery ?? DEFAULT_ITEMS_PER_DELIVERY;
  const seed = options.seed ?? 1;
  const chunk = options.chunk ?? MAX_BATCH_ITEMS;
  checkCount('customers', options.customers, MAX_SEED_ROWS);
  checkCount('deliveries', options.deliveries, MAX_SEED_ROWS);
  checkCount('items per delivery', itemsPerDelivery, MAX_DELIVERY_ITEMS);
  checkCount('seed', seed, 2 ** 32 - 1);
  if (chunk < 1) throw new Error('chunk must be at least 1');
  checkCount('chunk', chunk, MAX_BATCH_ITEMS);

  const result: SeedResult = {
    customers: { created: 0, updated: 0 },
    deliveries: { created: 0, ignored: 0 },
  };
  // Each chunk is generated while the database writes the one before (the batch is validated and
  // sent before loadBatch's first await): on two cores the generator costs almost nothing.
  let customersDone = 0;
  await pipeline(
    chunks(options.customers, chunk).map(
      ({ from, count }) =>
        () =>
          generateCustomers({ from, count, seed }),
    ),
    async (items) => {
      const counts = await loadBatch(db, tenantId, customers, items);
      result.customers.created += counts.created;
      result.customers.updated += counts.updated;
      customersDone += items.length;
      options.onProgress?.({ phase: 'customers', done: customersDone, total: options.customers });
    },
  );
  let deliveriesDone = 0;
  await pipeline(
    chunks(options.deliveries, chunk).map(
      ({ from, count }) =>
        () =>
          generateDeliveries({ from, count, seed, itemsPerDelivery, customers: options.customers }),
    ),
    async (items) => {
      const counts = await loadBatch(db, tenantId, deliveries, items);
      result.deliveries.created += counts.created;
      result.deliveries.ignored += counts.ignored;
      deliveriesDone += items.length;
      options.onProgress?.({ phase: 'deliveries', done: deliveriesDone, total: options.deliveries });
    },
  );
  return result;
}

function chunks(total: number, size: number): { from: number; count: number }[] {
  const list: { from: number; count: number }[] = [];
  for (let from = 0; from < total; from += size) list.push({ from, count: Math.min(size, total - from) });
  return list;
}

/** Loads chunk k while chunk k+1 is generated; one load at a time, in order. */
async function pipeline(
  generators: readonly (() => Record<string, unknown>[])[],
  load: (items: Record<string, unknown>[]) => Promise<void>,
): Promise<void> {
  let next = generators[0]?.();
  for (let k = 0; next; k++) {
    const loading = load(next);
    // Let the driver take a connection and send the statement before the generator holds the thread.
    await new Promise((sent) => setImmediate(sent));
    // If the generator throws, the load in flight still settles before the error propagates.
    try {
      next = generators[k + 1]?.();
    } catch (error) {
      await loading.catch(() => {});
      throw error;
    }
    await loading;
  }
}
