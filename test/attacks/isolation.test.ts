import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { appForNewTenant, testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { BATCH_ENDPOINTS, validItem } from '../helpers/batch-items.js';
import { at, customer, delivery, item } from '../helpers/read-data.js';

/*
 * Tenant isolation (extensions.md 1): two tenants that use the same codes on every endpoint. Each sees
 * and changes only its own rows, whatever the other one does; what is stored is read back with SQL,
 * not through the API that is under test. Credentials of one tenant never open the other's data.
 */

type Variant = 'A' | 'B' | 'A2';

interface Endpoint {
  name: string;
  path: string;
  table: string;
  upsert: boolean;
  /** SQL expression of the key (text) and of a value the variant decides (text). */
  keySql: string;
  valueSql: string;
  /** Three items with keys shared by both tenants; their values tell the variant. */
  items(variant: Variant): Record<string, unknown>[];
  /** The value valueSql reads back for an item of this variant and index. */
  value(variant: Variant, n: number): string;
}

const numberOf = (variant: Variant) => ({ A: 1, B: 2, A2: 3 })[variant];
const KEYS = [1, 2, 3];

const masterData = (name: string) => batchResources.find((resource) => resource.name === name)!;

/**
 * An endpoint of master data, from its declaration (test/helpers/batch-items.ts's valid items, keys
 * K1 to K3): its value is the first field outside the key that names nothing (text, integer or
 * decimal). A field that names another resource's row names that resource's item 1, which its own
 * endpoint wrote earlier (referred resources come first in batchResources: products).
 */
function masterDataEndpoint(resource: BatchResource): Endpoint {
  const valueName = resource.fieldNames.find((name) => {
    const field = resource.fields[name]!;
    return (
      !resource.key.includes(name) && !field.references && ['text', 'integer', 'decimal'].includes(field.kind)
    );
  });
  assert.ok(valueName, `${resource.name}: a field to carry the variant`);
  const kind = resource.fields[valueName]!.kind;
  const variantValue = (v: Variant, n: number) => (kind === 'text' ? `${v} ${n}` : numberOf(v) * 10 + n);
  const referred: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    if (!field.references) continue;
    const target = field.references.resource();
    assert.ok(
      batchResources.indexOf(masterData(target.name)) < batchResources.indexOf(resource),
      `${target.name} is loaded before ${resource.name}`,
    );
    referred[name] = validItem(masterData(target.name), 1)[field.references.field];
  }
  return {
    name: resource.name,
    path: resource.path,
    table: resource.table,
    upsert: resource.onExisting === 'update',
    keySql: resource.key.map((name) => `${name}::text`).join(" || '/' || "),
    // trim_scale: a decimal reads back as the number sent (21, not 21.00).
    valueSql: kind === 'decimal' ? `trim_scale(${valueName})::text` : `${valueName}::text`,
    items: (v) =>
      KEYS.map((n) => ({ ...validItem(resource, n), ...referred, [valueName]: variantValue(v, n) })),
    value: (v, n) => String(variantValue(v, n)),
  };
}

/*
 * Master data from the declarations; customers and deliveries written out here, since the second
 * test reads their lists back by their own fields (names, news, item observations, codes C1 and D1).
 */
const ENDPOINTS: Endpoint[] = [
  ...BATCH_ENDPOINTS.map((endpoint) => masterDataEndpoint(masterData(endpoint.name))),
  {
    name: 'customers',
    path: '/api/customers/batch-create',
    table: 'customers',
    upsert: true,
    keySql: 'code',
    valueSql: 'name',
    items: (v) => KEYS.map((n) => customer(`C${n}`, { name: `${v} customer ${n}` })),
    value: (v, n) => `${v} customer ${n}`,
  },
  {
    name: 'deliveries',
    path: '/api/deliveries/batch-create',
    table: 'deliveries',
    upsert: false,
    keySql: 'code',
    valueSql: 'news',
    items: (v) =>
      KEYS.map((n) =>
        delivery(`D${n}`, {
          news: `${v} delivery ${n}`,
          items: [item(1, { observations: `${v} item ${n}` })],
        }),
      ),
    value: (v, n) => `${v} delivery ${n}`,
  },
];

/** key -> value of a tenant's rows in one table, read with SQL. */
async function stored(db: Database, endpoint: Endpoint, tenantId: number): Promise<Record<string, string>> {
  const rows = await db.query<{ k: string; v: string }>(
    `SELECT ${endpoint.keySql} AS k, ${endpoint.valueSql} AS v FROM ${endpoint.table} WHERE tenant_id = $1`,
    [tenantId],
  );
  return Object.fromEntries(rows.map((row) => [row.k, row.v]));
}

/** What the table should hold for a tenant whose rows carry this variant. */
async function expected(db: Database, endpoint: Endpoint, tenantId: number, variant: Variant) {
  const now = await stored(db, endpoint, tenantId);
  const keys = Object.keys(now).sort();
  assert.equal(keys.length, 3, `${endpoint.name}: three rows of tenant ${tenantId}: ${JSON.stringify(now)}`);
  return Object.fromEntries(
    keys.map((key, i) => [key, endpoint.value(variant, KEYS[i]!)] as const),
  ) as Record<string, string>;
}

async function assertRows(
  db: Database,
  endpoint: Endpoint,
  tenant: TenantClient<NewTenant>,
  variant: Variant,
) {
  assert.deepEqual(
    await stored(db, endpoint, tenant.tenant.tenantId),
    await expected(db, endpoint, tenant.tenant.tenantId, variant),
    `${endpoint.name}: the rows of tenant ${tenant.tenant.tenantId} hold the values of ${variant}`,
  );
}

async function childObservations(db: Database, tenantId: number): Promise<string[]> {
  const rows = await db.query<{ o: string }>(
    'SELECT observations AS o FROM delivery_items WHERE tenant_id = $1 ORDER BY delivery_code',
    [tenantId],
  );
  return rows.map((row) => row.o);
}

async function post(tenant: TenantClient<NewTenant>, path: string, body: unknown, status: number) {
  const answer = await tenant.post(path, body);
  assert.equal(answer.status, status, `${path}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Every row count of a tenant, by table: nothing else may change when another tenant writes. */
async function allCounts(db: Database, tenantId: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of [...ENDPOINTS.map((e) => e.table), 'delivery_items']) {
    const [row] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`,
      [tenantId],
    );
    counts[table] = row!.n;
  }
  const [acked] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM deliveries WHERE tenant_id = $1 AND acknowledged_at IS NOT NULL',
    [tenantId],
  );
  counts.acknowledged = acked!.n;
  return counts;
}

for (const backend of backends()) {
  describe(`tenant isolation on ${backend.name}`, () => {
    test('every batch endpoint: the same keys in two tenants are two rows; upserts never touch the other tenant', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);

      for (const endpoint of ENDPOINTS) {
        const first = await post(a, endpoint.path, endpoint.items('A'), 201);
        assert.deepEqual([first.created, first.updated, first.ignored], [3, 0, 0], endpoint.name);
        // B's keys are the same: to B they are new, A's rows are not "existing".
        const second = await post(b, endpoint.path, endpoint.items('B'), 201);
        assert.deepEqual([second.created, second.updated, second.ignored], [3, 0, 0], endpoint.name);
        await assertRows(db, endpoint, a, 'A');
        await assertRows(db, endpoint, b, 'B');
      }

      // A sends every batch again with other values: upserts change A's rows only; the other
      // endpoints ignore A's own existing keys. B's rows keep B's values, and were not rewritten.
      const bBefore = await allCounts(db, b.tenant.tenantId);
      const [bUpdatedBefore] = await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM products WHERE tenant_id = $1 AND updated_at IS NOT NULL)
              + (SELECT count(*) FROM prices WHERE tenant_id = $1 AND updated_at IS NOT NULL)
              + (SELECT count(*) FROM customers WHERE tenant_id = $1 AND updated_at IS NOT NULL) AS n`,
        [b.tenant.tenantId],
      );
      for (const endpoint of ENDPOINTS) {
        const again = await post(a, endpoint.path, endpoint.items('A2'), 201);
        const expectedCounts = endpoint.upsert ? [0, 3, 0] : [0, 0, 3];
        assert.deepEqual([again.created, again.updated, again.ignored], expectedCounts, endpoint.name);
        await assertRows(db, endpoint, a, endpoint.upsert ? 'A2' : 'A');
        await assertRows(db, endpoint, b, 'B');
      }
      assert.deepEqual(await allCounts(db, b.tenant.tenantId), bBefore);
      const [bUpdatedAfter] = await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM products WHERE tenant_id = $1 AND updated_at IS NOT NULL)
              + (SELECT count(*) FROM prices WHERE tenant_id = $1 AND updated_at IS NOT NULL)
              + (SELECT count(*) FROM customers WHERE tenant_id = $1 AND updated_at IS NOT NULL) AS n`,
        [b.tenant.tenantId],
      );
      assert.equal(Number(bUpdatedAfter!.n), Number(bUpdatedBefore!.n), "no update date of B's rows moved");
      assert.deepEqual(await childObservations(db, a.tenant.tenantId), ['A item 1', 'A item 2', 'A item 3']);
      assert.deepEqual(await childObservations(db, b.tenant.tenantId), ['B item 1', 'B item 2', 'B item 3']);

      // A product that only A has is unknown to B: B cannot refer to it.
      for (const resource of batchResources.filter((r) => r.reference)) {
        const reference = resource.reference!;
        const target = batchResources.find((r) => r.path === reference.path)!;
        const only = { ...validItem(target, 0), [reference.column]: 'ONLY-A' };
        await post(a, target.path, [only], 201);
        const refused = await post(
          b,
          resource.path,
          [{ ...validItem(resource, 9), [reference.name]: 'ONLY-A' }],
          400,
        );
        assert.ok(
          refused.errors[0].errors.some(
            (e: { field: string; message: string }) =>
              e.field === reference.name && e.message === reference.message,
          ),
          `${resource.path}: ${JSON.stringify(refused)}`,
        );
      }
      assert.deepEqual(await allCounts(db, b.tenant.tenantId), bBefore, 'nothing of B changed');
    });

    test('both lists and the acknowledgement: each tenant sees and acknowledges only its own rows', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      const customers = ENDPOINTS.find((e) => e.name === 'customers')!;
      const deliveries = ENDPOINTS.find((e) => e.name === 'deliveries')!;
      await post(a, customers.path, customers.items('A'), 201);
      await post(b, customers.path, [...customers.items('B'), customer('ONLY-B', { name: 'B only' })], 201);
      await post(a, deliveries.path, deliveries.items('A'), 201);
      await post(
        b,
        deliveries.path,
        [
          ...deliveries.items('B'),
          delivery('ONLY-B', { client_id: 'CB-ONLY', seller_id: 'SB-ONLY', reported_at: at(5) }),
        ],
        201,
      );

      for (const [tenant, variant, count] of [
        [a, 'A', 3],
        [b, 'B', 4],
      ] as const) {
        const list = await tenant.get('/v1/customers?sort=created_at&limit=1000');
        assert.equal(list.status, 200);
        assert.equal(list.body.meta.totalItems, count);
        assert.equal(list.body.data.length, count);
        for (const c of list.body.data) assert.ok(c.name.startsWith(variant), JSON.stringify(c));
        const pending = await tenant.get('/v1/deliveries/pending?limit=500');
        assert.equal(pending.status, 200);
        assert.equal(pending.body.meta.totalItems, count);
        for (const d of pending.body.data) {
          assert.ok(d.code === 'ONLY-B' || d.news.startsWith(variant), JSON.stringify(d));
          for (const i of d.items) assert.ok(i.observations.startsWith(variant), JSON.stringify(i));
        }
      }

      // Filters never reach across: A asking for B's only code gets nothing, through every filter.
      for (const path of [
        '/v1/customers?client_id=ONLY-B',
        '/v1/customers?client_id=ONLY-B&created_from=2000-01-01&modified_from=2000-01-01',
      ]) {
        const none = await a.get(path);
        assert.equal(none.status, 200);
        assert.equal(none.body.meta.totalItems, 0, path);
        assert.deepEqual(none.body.data, []);
      }
      const c1 = await a.get('/v1/customers?client_id=C1');
      assert.equal(c1.body.data.length, 1);
      assert.equal(c1.body.data[0].name, 'A customer 1');
      for (const path of [
        '/v1/deliveries/pending?client_id=CB-ONLY',
        '/v1/deliveries/pending?seller_id=SB-ONLY&reported_from=2000-01-01',
      ]) {
        const none = await a.get(path);
        assert.equal(none.status, 200);
        assert.equal(none.body.meta.totalItems, 0, path);
        assert.deepEqual(none.body.data, []);
      }
      const fromB = await b.get('/v1/deliveries/pending?client_id=CB-ONLY&seller_id=SB-ONLY');
      assert.deepEqual(
        fromB.body.data.map((d: { code: string }) => d.code),
        ['ONLY-B'],
      );

      // A acknowledges a shared code and B's only code: B's delivery of the same code stays pending.
      const ack = await post(a, '/v1/deliveries/acknowledge', ['D1', 'ONLY-B'], 200);
      assert.equal(ack.acknowledged, 1);
      assert.deepEqual(ack.notFound, ['ONLY-B']);
      const [bD1] = await db.query<{ acked: boolean }>(
        'SELECT acknowledged_at IS NOT NULL AS acked FROM deliveries WHERE tenant_id = $1 AND code = $2',
        [b.tenant.tenantId, 'D1'],
      );
      assert.equal(bD1!.acked, false, "B's D1 is not acknowledged");
      const [bOnly] = await db.query<{ acked: boolean }>(
        'SELECT acknowledged_at IS NOT NULL AS acked FROM deliveries WHERE tenant_id = $1 AND code = $2',
        [b.tenant.tenantId, 'ONLY-B'],
      );
      assert.equal(bOnly!.acked, false);
      const pendingA = await a.get('/v1/deliveries/pending?limit=500');
      assert.deepEqual(pendingA.body.data.map((d: { code: string }) => d.code).sort(), ['D2', 'D3']);
      assert.equal(pendingA.body.meta.totalItems, 2);
      const pendingB = await b.get('/v1/deliveries/pending?limit=500');
      assert.deepEqual(pendingB.body.data.map((d: { code: string }) => d.code).sort(), [
        'D1',
        'D2',
        'D3',
        'ONLY-B',
      ]);
      assert.equal(pendingB.body.meta.totalItems, 4);
    });

    test("one tenant's credentials never open the other's data, on any endpoint", async () => {
      const db = await backend.db();
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => app.close());
      const ta = await createTenant(db, `iso-${randomUUID()}`);
      const tb = await createTenant(db, `iso-${randomUUID()}`);
      const tokenOf = async (clientId: string, clientSecret: string, key?: string) =>
        app.inject({
          method: 'POST',
          url: '/token',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            ...(key ? { 'subscription-key': key } : {}),
          },
          payload: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: clientId,
            client_secret: clientSecret,
          }).toString(),
        });
      const tokenA = (await tokenOf(ta.clientId, ta.clientSecret)).json().access_token as string;
      const tokenB = (await tokenOf(tb.clientId, tb.clientSecret)).json().access_token as string;
      assert.ok(tokenA && tokenB);

      // /token: A's client with B's subscription key, and A's client id with B's secret, get no token.
      const crossedKey = await tokenOf(ta.clientId, ta.clientSecret, tb.subscriptionKey);
      assert.equal(crossedKey.statusCode, 400);
      assert.equal(crossedKey.json().error, 'invalid_client');
      assert.equal(crossedKey.json().access_token, undefined);
      const crossedSecret = await tokenOf(ta.clientId, tb.clientSecret);
      assert.equal(crossedSecret.statusCode, 400);
      assert.equal(crossedSecret.json().error, 'invalid_client');

      const bHeaders = { 'subscription-key': tb.subscriptionKey, authorization: `Bearer ${tokenB}` };
      const seeded = await app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: { ...bHeaders, 'content-type': 'application/json' },
        payload: JSON.stringify([{ code: 'P1', description: 'B' }]),
      });
      assert.equal(seeded.statusCode, 201);
      const aBefore = await allCounts(db, ta.tenantId);
      const bBefore = await allCounts(db, tb.tenantId);
      const mixes = [
        { 'subscription-key': ta.subscriptionKey, authorization: `Bearer ${tokenB}` },
        { 'subscription-key': tb.subscriptionKey, authorization: `Bearer ${tokenA}` },
      ];
      const requests = [
        ...ENDPOINTS.map((e) => ({ method: 'POST' as const, url: e.path, body: e.items('A') as unknown })),
        { method: 'POST' as const, url: '/v1/deliveries/acknowledge', body: ['D1'] as unknown },
        { method: 'GET' as const, url: '/v1/customers', body: undefined },
        { method: 'GET' as const, url: '/v1/deliveries/pending', body: undefined },
      ];
      let refused = 0;
      for (const headers of mixes) {
        for (const request of requests) {
          const response = await app.inject({
            method: request.method,
            url: request.url,
            headers: { ...headers, ...(request.body ? { 'content-type': 'application/json' } : {}) },
            ...(request.body ? { payload: JSON.stringify(request.body) } : {}),
          });
          assert.equal(response.statusCode, 401, `${request.url}: ${response.body}`);
          assert.deepEqual(response.json(), {
            statusCode: 401,
            errors: [{ message: 'The subscription key and the access token belong to different tenants' }],
          });
          refused++;
        }
      }
      assert.equal(refused, mixes.length * requests.length);
      assert.deepEqual(await allCounts(db, ta.tenantId), aBefore, 'nothing of A changed');
      assert.deepEqual(await allCounts(db, tb.tenantId), bBefore, 'nothing of B changed');
    });
  });
}
