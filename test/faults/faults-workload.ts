import { performance } from 'node:perf_hooks';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { Answer } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { customer, delivery, item } from '../helpers/read-data.js';

/*
 * A mixed, concurrent workload of one tenant against one or more servers (the tenant's client over
 * each: TenantClient.over), and a model of what was
 * acknowledged: upserts of overlapping price and customer keys in random order (repeats inside a
 * batch included), deliveries created with overlapping codes, acknowledgements, and reads. Every
 * written value is unique, so the final database can be checked against the model exactly.
 */

const PRODUCTS = ['P1', 'P2', 'P3', 'P4', 'P5'];
const PRICE_LISTS = ['L1', 'L2', 'L3', 'L4', 'L5', 'L6', 'L7', 'L8'];
const CUSTOMERS = Array.from({ length: 30 }, (_, i) => `C${i + 1}`);
const DELIVERIES = Array.from({ length: 300 }, (_, i) => `D${i + 1}`);

/** One acknowledged write of one key: its value, and when its request was sent and answered. */
interface Write {
  value: string;
  sentAt: number;
  ackAt: number;
}

export interface WorkloadResult {
  requests: number;
  byStatus: Record<string, number>;
  /** Answers other than the expected 200/201, with their text (should be none). */
  failures: string[];
  prices: Map<string, Write[]>;
  customers: Map<string, Write[]>;
  deliveries: Map<string, Write[]>;
  createdCounts: { prices: number; customers: number; deliveries: number };
  acknowledged: Set<string>;
}

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const between = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/** Products the prices refer to: load them once before the workload. */
export async function seedWorkloadProducts(tenant: TenantClient): Promise<void> {
  const answer = await tenant.post(
    '/api/products/batch-create',
    PRODUCTS.map((code) => ({ code, description: code })),
  );
  if (answer.status !== 201) throw new Error(`seeding products: ${answer.status} ${answer.text}`);
}

/** Runs `clients` concurrent clients against the servers (round robin over `servers`) for durationMs. */
export async function runWorkload(
  servers: readonly TenantClient[],
  options: { clients: number; durationMs: number },
): Promise<WorkloadResult> {
  const result: WorkloadResult = {
    requests: 0,
    byStatus: {},
    failures: [],
    prices: new Map(),
    customers: new Map(),
    deliveries: new Map(),
    createdCounts: { prices: 0, customers: 0, deliveries: 0 },
    acknowledged: new Set(),
  };
  let seq = 0;
  const deadline = performance.now() + options.durationMs;

  const record = (answer: Answer, expected: number, what: string) => {
    result.requests++;
    result.byStatus[answer.status] = (result.byStatus[answer.status] ?? 0) + 1;
    if (answer.status !== expected)
      result.failures.push(`${what}: ${answer.status} ${answer.text.slice(0, 300)}`);
    return answer.status === expected;
  };
  const remember = (into: Map<string, Write[]>, key: string, write: Write) => {
    const list = into.get(key) ?? [];
    list.push(write);
    into.set(key, list);
  };

  /** An upsert batch: random keys, repeats allowed (the last occurrence wins), each value unique. */
  async function upsert(server: TenantClient, kind: 'prices' | 'customers') {
    const size = kind === 'prices' ? between(1, 40) : between(1, 20);
    const items: { key: string; value: string; body: unknown }[] = [];
    for (let n = 0; n < size; n++) {
      const value = String(++seq);
      if (kind === 'prices') {
        const product = pick(PRODUCTS);
        const list = pick(PRICE_LISTS);
        items.push({
          key: `${product}/${list}`,
          value: `${value}.00`,
          body: { product_code: product, price_list: list, price: Number(value) },
        });
      } else {
        const code = pick(CUSTOMERS);
        items.push({ key: code, value: `w${value}`, body: customer(code, { name: `w${value}` }) });
      }
    }
    const sentAt = performance.now();
    const answer = await server.post(
      `/api/${kind}/batch-create`,
      items.map((i) => i.body),
    );
    const ackAt = performance.now();
    if (!record(answer, 201, kind)) return;
    const last = new Map(items.map((i) => [i.key, i.value]));
    const { created, updated, ignored } = answer.body;
    if (created + updated !== last.size || ignored !== items.length - last.size) {
      result.failures.push(
        `${kind}: counts ${JSON.stringify(answer.body)} for ${items.length} items, ${last.size} keys`,
      );
    }
    result.createdCounts[kind] += created;
    for (const [key, value] of last) remember(result[kind], key, { value, sentAt, ackAt });
  }

  /** Deliveries with overlapping codes: the first write of a code wins, later ones are ignored. */
  async function createDeliveries(server: TenantClient) {
    const codes = [...new Set(Array.from({ length: between(1, 10) }, () => pick(DELIVERIES)))];
    const tag = `w${++seq}`;
    const sentAt = performance.now();
    const answer = await server.post(
      '/api/deliveries/batch-create',
      codes.map((code) =>
        delivery(code, {
          news: tag,
          items: [item(1, { observations: tag }), item(2, { observations: tag })],
        }),
      ),
    );
    const ackAt = performance.now();
    if (!record(answer, 201, 'deliveries')) return;
    result.createdCounts.deliveries += answer.body.created;
    for (const code of codes) remember(result.deliveries, code, { value: tag, sentAt, ackAt });
  }

  async function acknowledge(server: TenantClient) {
    const codes = Array.from({ length: between(1, 3) }, () => pick(DELIVERIES));
    const answer = await server.post('/v1/deliveries/acknowledge', codes);
    if (!record(answer, 200, 'acknowledge')) return;
    const notFound = new Set<string>(answer.body.notFound);
    for (const code of codes) if (!notFound.has(code)) result.acknowledged.add(code);
  }

  async function read(server: TenantClient) {
    const path =
      Math.random() < 0.5
        ? `/v1/customers?limit=${between(1, 50)}&page=${between(1, 3)}&sort=${pick(['created_at', '-created_at'])}`
        : `/v1/deliveries/pending?limit=${between(1, 50)}&page=${between(1, 3)}`;
    const answer = await server.get(path);
    if (record(answer, 200, path) && !(Array.isArray(answer.body?.data) && answer.body.meta)) {
      result.failures.push(`${path}: not a page: ${answer.text.slice(0, 200)}`);
    }
  }

  async function client(index: number) {
    let turn = index;
    while (performance.now() < deadline) {
      const server = servers[turn++ % servers.length]!;
      const roll = Math.random();
      if (roll < 0.35) await upsert(server, 'prices');
      else if (roll < 0.55) await upsert(server, 'customers');
      else if (roll < 0.7) await createDeliveries(server);
      else if (roll < 0.75) await acknowledge(server);
      else await read(server);
    }
  }

  await Promise.all(Array.from({ length: options.clients }, (_, i) => client(i)));
  return result;
}

/**
 * Upsert: the stored value of a key is the value of an acknowledged write that no other acknowledged
 * write of the key followed (sent after it was answered). Insert-if-absent: of a write that no other
 * acknowledged write of the key preceded (answered before it was sent).
 */
function candidates(writes: readonly Write[], rule: 'last' | 'first'): Set<string> {
  return new Set(
    writes
      .filter((w) =>
        rule === 'last'
          ? !writes.some((other) => other.sentAt > w.ackAt)
          : !writes.some((other) => other.ackAt < w.sentAt),
      )
      .map((w) => w.value),
  );
}

/** Differences between the database and the model; empty when they agree. */
export async function compareWithModel(
  db: Database,
  tenantId: number,
  model: WorkloadResult,
): Promise<{ problems: string[]; checked: number }> {
  const problems: string[] = [];
  let checked = 0;
  const compare = (
    name: string,
    stored: Map<string, string>,
    writes: Map<string, Write[]>,
    rule: 'last' | 'first',
  ) => {
    for (const key of stored.keys()) {
      if (!writes.has(key)) problems.push(`${name} ${key}: stored, never acknowledged`);
    }
    for (const [key, list] of writes) {
      checked++;
      const value = stored.get(key);
      if (value === undefined) problems.push(`${name} ${key}: acknowledged, not stored`);
      else if (!candidates(list, rule).has(value)) {
        problems.push(`${name} ${key}: stored ${value}, expected one of ${[...candidates(list, rule)]}`);
      }
    }
  };

  const prices = await db.query<{ k: string; v: string }>(
    `SELECT product_code || '/' || price_list AS k, price::text AS v FROM prices WHERE tenant_id = $1`,
    [tenantId],
  );
  compare('price', new Map(prices.map((r) => [r.k, r.v])), model.prices, 'last');
  if (prices.length !== model.createdCounts.prices) {
    problems.push(
      `prices: ${prices.length} rows, but the 201s reported ${model.createdCounts.prices} created`,
    );
  }

  const customers = await db.query<{ k: string; v: string }>(
    'SELECT code AS k, name AS v FROM customers WHERE tenant_id = $1',
    [tenantId],
  );
  compare('customer', new Map(customers.map((r) => [r.k, r.v])), model.customers, 'last');
  if (customers.length !== model.createdCounts.customers) {
    problems.push(`customers: ${customers.length} rows, ${model.createdCounts.customers} reported created`);
  }

  const deliveries = await db.query<{ k: string; v: string; acked: boolean; items: string[] }>(
    `SELECT d.code AS k, d.news AS v, d.acknowledged_at IS NOT NULL AS acked,
            ARRAY(SELECT i.observations FROM delivery_items i
                  WHERE i.tenant_id = d.tenant_id AND i.delivery_code = d.code ORDER BY i.item_number) AS items
     FROM deliveries d WHERE d.tenant_id = $1`,
    [tenantId],
  );
  compare('delivery', new Map(deliveries.map((r) => [r.k, r.v])), model.deliveries, 'first');
  if (deliveries.length !== model.createdCounts.deliveries) {
    problems.push(
      `deliveries: ${deliveries.length} rows, ${model.createdCounts.deliveries} reported created`,
    );
  }
  for (const d of deliveries) {
    if (d.items.length !== 2 || d.items.some((tag) => tag !== d.v)) {
      problems.push(`delivery ${d.k}: items ${d.items} do not belong to its write ${d.v}`);
    }
    if (d.acked !== model.acknowledged.has(d.k)) {
      problems.push(`delivery ${d.k}: acknowledged ${d.acked}, model says ${model.acknowledged.has(d.k)}`);
    }
  }
  return { problems, checked };
}
