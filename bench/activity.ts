/**
 * GET /v1/activity and GET /v1/overview (issue 40: at most 20 ms p99 at 1,000,000 customers and
 * 100,000 recorded requests), PostgreSQL. One tenant is seeded with customers by `sfa-backoffice seed`;
 * its write requests are recorded through the product itself: one-item customer batches over HTTP,
 * one in ten invalid (a 400 with its problems), so every filter has rows to find. Then each page is
 * measured over HTTP beside the statement the service sends for it (src/sql/activity.ts,
 * src/sql/overview.ts), run raw on the same database, and the answers are checked to hold the same
 * rows first. `npm run bench:activity` (`-- --quick`: 100,000 customers, 10,000 requests).
 */
import { customers } from '../src/resources/customers.js';
import { batchResources } from '../src/resources/index.js';
import { type ActivityQuery, activityPage } from '../src/sql/activity.js';
import { overviewJson } from '../src/sql/overview.js';
import { cleanupAll } from './lib/cleanup.js';
import { combine, type LoadResult, runLoad, summary } from './lib/load.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { prepareReads } from './lib/reads.js';
import { formatTable, ms, ratio } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const CUSTOMERS = envInt('BENCH_ACTIVITY_CUSTOMERS', quick ? 100_000 : 1_000_000, 1_000, 10_000_000);
const RECORDED = envInt('BENCH_ACTIVITY_REQUESTS', quick ? 10_000 : 100_000, 100, 10_000_000);
// One request at a time: the latency of a page, not the queue of two cores shared by four clients.
const CONCURRENCY = envInt('BENCH_CONCURRENCY', 1, 1, 64);
const REQUESTS = envInt('BENCH_ACTIVITY_TIMED', quick ? 200 : 1_000, 10, 100_000);
const BLOCKS = 4;

const encoder = new TextEncoder();

/** A valid customer: every required field's example value, and its own code. */
function validCustomer(code: string): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(customers.fields))
    if (field.required) item[name] = field.example(name);
  return { ...item, code };
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(
    `activity benchmark ${new Date().toISOString()}${quick ? ' (quick)' : ''}: ${await describeMachine(true)}`,
  );
  const setup = await prepareReads(
    'postgres',
    { main: { customers: CUSTOMERS, deliveries: 0, itemsPerDelivery: 1 } },
    CONCURRENCY,
  );
  try {
    const tenant = setup.tenants.main!;
    const headers = { ...tenant.headers, 'content-type': 'application/json' };
    const recordStarted = performance.now();
    const statuses = new Map<number, number>();
    await runLoad(
      async (n) => {
        const item = n % 10 === 9 ? { code: `ACT-${n}` } : validCustomer(`ACT-${n}`);
        const answer = await setup.client.request(
          'POST',
          '/api/customers/batch-create',
          headers,
          encoder.encode(JSON.stringify([item])),
        );
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      },
      { requests: RECORDED, concurrency: 8, warmup: 0 },
    );
    if (statuses.get(201) !== RECORDED - Math.floor(RECORDED / 10)) {
      throw new Error(`write requests answered ${JSON.stringify(Object.fromEntries(statuses))}`);
    }
    console.log(
      `  ${RECORDED} write requests recorded in ${((performance.now() - recordStarted) / 1000).toFixed(1)} s: ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    await setup.raw.query(
      'VACUUM (ANALYZE) activity, written_hours, resource_rows, written_deltas, customers',
    );
    const raw = { query: setup.raw.query.bind(setup.raw), exec: async () => {} };

    // A page deep in the history: the before cursor of the request in the middle.
    const [middle] = await setup.raw.query<{ id: string }>(
      'SELECT id::text AS id FROM activity WHERE tenant_id = $1 ORDER BY id LIMIT 1 OFFSET $2',
      [tenant.id, Math.floor(RECORDED / 2)],
    );
    const query = (q: Partial<ActivityQuery>): ActivityQuery => ({
      tenantId: tenant.id,
      limit: 50,
      outcome: undefined,
      resource: undefined,
      before: undefined,
      ...q,
    });
    const names = batchResources.map((resource) => resource.name);
    const workloads: { label: string; path: string; raw: () => Promise<string> }[] = [
      {
        label: 'GET /v1/activity',
        path: '/v1/activity',
        raw: async () => (await activityPage(raw, query({}))).data,
      },
      {
        label: 'GET /v1/activity?limit=100&before=(middle)',
        path: `/v1/activity?limit=100&before=${middle!.id}`,
        raw: async () => (await activityPage(raw, query({ limit: 100, before: BigInt(middle!.id) }))).data,
      },
      {
        label: 'GET /v1/activity?outcome=failed',
        path: '/v1/activity?outcome=failed',
        raw: async () => (await activityPage(raw, query({ outcome: 'failed' }))).data,
      },
      {
        label: 'GET /v1/activity?outcome=succeeded&resource=customers',
        path: '/v1/activity?outcome=succeeded&resource=customers',
        raw: async () =>
          (await activityPage(raw, query({ outcome: 'succeeded', resource: 'customers' }))).data,
      },
      {
        label: 'GET /v1/overview',
        path: '/v1/overview',
        raw: () => overviewJson(raw, tenant.id, names),
      },
    ];

    const rows: string[][] = [];
    for (const workload of workloads) {
      // The same rows on both sides before any clock runs.
      const first = await setup.client.request('GET', workload.path, tenant.headers);
      if (first.status !== 200) throw new Error(`${workload.label}: ${first.status} ${first.body}`);
      const rawText = await workload.raw();
      const served = first.body.toString();
      if (!served.includes(rawText))
        throw new Error(`${workload.label}: the service's answer differs from the raw statement's`);
      const service = async () => {
        const answer = await setup.client.request('GET', workload.path, tenant.headers);
        if (answer.status !== 200) throw new Error(`${workload.label}: ${answer.status}`);
      };
      const options = { requests: Math.ceil(REQUESTS / BLOCKS), concurrency: CONCURRENCY, warmup: 20 };
      const services: LoadResult[] = [];
      const raws: LoadResult[] = [];
      for (let block = 0; block < BLOCKS; block++) {
        const order = block % 2 === 0 ? ['service', 'raw'] : ['raw', 'service'];
        for (const side of order) {
          if (side === 'service') services.push(await runLoad(service, options));
          else raws.push(await runLoad(async () => void (await workload.raw()), options));
        }
      }
      const s = summary(combine(services));
      const r = summary(combine(raws));
      rows.push([workload.label, ms(s.p50), ms(s.p99), ms(r.p50), ms(r.p99), ratio(s.p50 / r.p50)]);
      console.log(`  ${workload.label}: service p50 ${ms(s.p50)} p99 ${ms(s.p99)} ms (load ${load1()})`);
    }
    console.log(
      `\n${CUSTOMERS} customers, ${RECORDED} recorded requests in one tenant; concurrency ${CONCURRENCY}; ${REQUESTS} timed requests per side\n`,
    );
    console.log(
      formatTable(
        ['request', 'service p50 ms', 'service p99 ms', 'raw p50 ms', 'raw p99 ms', 'p50 ratio'],
        rows,
      ),
    );
  } finally {
    setup.client.close();
    await cleanupAll();
  }
  console.log(
    `\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s; load average (1 min) at end ${load1()}`,
  );
}

await benchMain(main);
