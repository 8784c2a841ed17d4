import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { Queryable } from '../../src/db/database.js';
import { RESTORED_AFTER_MESSAGE, STALE_AFTER_MESSAGE } from '../../src/feed/params.js';
import { buildOpenApiDocument } from '../../src/openapi/document.js';
import { feedResourceNamed } from '../../src/resources/feed.js';
import { batchResources } from '../../src/resources/index.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { BATCH_ENDPOINTS } from '../helpers/batch-items.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { customer, delivery, item } from '../helpers/read-data.js';

/*
 * GET /v1/changes (extensions.md 10): shapes of every resource, paging by cursor, moves on update and
 * acknowledgement, cursor and parameter errors, tenant isolation. The concurrency model is
 * test/feed/changes-concurrency.test.ts.
 */

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

/** A batch written and visible in the feed (other suites' transactions may hold it back a moment). */
async function load(tenant: TenantClient, path: string, items: unknown[]) {
  const response = await tenant.post(path, items);
  assert.equal(response.status, 201, JSON.stringify(response.body));
  await feedCaughtUp(db);
}

async function seed(tenant: TenantClient, codes: string[]) {
  await seedProducts(tenant, codes);
  await feedCaughtUp(db);
}

let db: Queryable;

async function changes(tenant: TenantClient, query: string) {
  const response = await tenant.get(`/v1/changes?${query}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body as { data: any[]; next: string; hasMore: boolean };
}

/** Follows next until hasMore is false; every page's records. */
async function drain(tenant: TenantClient, resource: string, after?: string, limit = 100) {
  const pages: any[][] = [];
  const cursors: string[] = [];
  let cursor = after;
  for (;;) {
    const page = await changes(
      tenant,
      `resource=${resource}&limit=${limit}${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
    );
    pages.push(page.data);
    cursor = page.next;
    cursors.push(cursor);
    if (!page.hasMore) return { pages, cursors, next: cursor, records: pages.flat() };
  }
}

function problem(status: number, body: any, field: string) {
  assert.equal(status, 400, JSON.stringify(body));
  assert.equal(body.statusCode, 400);
  assert.deepEqual(
    body.errors.map((e: { field: string }) => e.field),
    [field],
    JSON.stringify(body),
  );
  assert.equal(typeof body.errors[0].message, 'string');
}

/** The document's schema of one record of the resource lists exactly the record's keys, in order. */
function assertDocumentedShape(resource: string, record: object) {
  const { schemas } = buildOpenApiDocument().components as { schemas: Record<string, any> };
  const schema = schemas[feedResourceNamed(resource)!.schemaName];
  assert.deepEqual(Object.keys(record), Object.keys(schema.properties), resource);
}

const cursorOf = (body: object) => Buffer.from(JSON.stringify(body)).toString('base64url');

for (const backend of backends()) {
  describe(`change feed on ${backend.name}`, () => {
    before(async () => {
      db = await backend.db();
    });
    test('master data: a record of each resource, with its batch fields plus created_at and updated_at', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await seed(tenant, ['P1']);
      for (const endpoint of BATCH_ENDPOINTS) {
        await load(tenant, endpoint.path, [endpoint.valid(1)]);
        const resource = batchResources.find((r) => r.name === endpoint.name)!;
        const { records } = await drain(tenant, endpoint.name);
        // The record just written is the last of its feed (products: after the seeded P1).
        const record = records.at(-1);
        assert.deepEqual(Object.keys(record), [...Object.keys(resource.fields), 'created_at', 'updated_at']);
        assertDocumentedShape(endpoint.name, record);
        assert.match(record.created_at, DATE_TIME);
        assert.equal(record.updated_at, null, `${endpoint.name}: never updated`);
        for (const [name, value] of Object.entries(endpoint.valid(1))) {
          // Numbers as the read endpoints write them: JSON numbers (factors' unit 2.25, prices' 10.00).
          assert.equal(
            Number(record[name]) || record[name],
            Number(value) || value,
            `${endpoint.name}.${name}`,
          );
        }
      }
    });

    test('customers exactly as GET /v1/customers lists them; an update moves a record to the end', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, '/api/customers/batch-create', [
        customer('C1', { quota: '1234567890123456.78', latitude: '4.1234567' }),
        customer('C2'),
        customer('C3'),
      ]);
      const listed = (await tenant.get('/v1/customers?sort=created_at')).body.data;
      const first = await drain(tenant, 'customers');
      assertDocumentedShape('customers', first.records[0]);
      assert.deepEqual(
        first.records.sort((a, b) => a.code.localeCompare(b.code)),
        listed.sort((a: any, b: any) => a.code.localeCompare(b.code)),
      );
      const raw = (
        await tenant.transport.app.inject({
          method: 'GET',
          url: '/v1/changes?resource=customers',
          headers: tenant.headers,
        })
      ).body;
      assert.match(raw, /"quota":1234567890123456\.78/, 'every digit, as a JSON number');

      // Nothing new: the same cursor back, no records.
      const idle = await changes(tenant, `resource=customers&after=${first.next}`);
      assert.deepEqual(idle, { data: [], next: first.next, hasMore: false });

      await load(tenant, '/api/customers/batch-create', [customer('C1', { name: 'Renamed' })]);
      const moved = await drain(tenant, 'customers', first.next);
      assert.deepEqual(
        moved.records.map((c) => [c.code, c.name]),
        [['C1', 'Renamed']],
      );
      assert.match(moved.records[0].updated_at, DATE_TIME);
      // The same values again change nothing: no new position.
      await load(tenant, '/api/customers/batch-create', [customer('C1', { name: 'Renamed' })]);
      assert.deepEqual((await drain(tenant, 'customers', moved.next)).records, []);
    });

    test('deliveries as pending lists them, with items and acknowledged_at; an acknowledgement is a change', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, '/api/deliveries/batch-create', [
        delivery('D1', { items: [item(2), item(1, { product_quantity: '1234567890123456.78' })] }),
        delivery('D2'),
      ]);
      const pending = (await tenant.get('/v1/deliveries/pending')).body.data;
      const first = await drain(tenant, 'deliveries');
      assert.deepEqual(
        first.records.map((d) => d.code),
        ['D1', 'D2'],
      );
      for (const record of first.records) {
        assertDocumentedShape('deliveries', record);
        const { acknowledged_at, rejected_at, rejection_reason, ...listedShape } = record;
        assert.equal(acknowledged_at, null);
        assert.equal(rejected_at, null);
        assert.equal(rejection_reason, null);
        assert.deepEqual(
          listedShape,
          pending.find((d: any) => d.code === record.code),
        );
      }
      assert.deepEqual(
        first.records[0].items.map((i: any) => i.item_number),
        [1, 2],
      );
      const ack = await tenant.post('/v1/deliveries/acknowledge', ['D1']);
      assert.equal(ack.status, 200);
      await feedCaughtUp(db);
      const after = await drain(tenant, 'deliveries', first.next);
      assert.deepEqual(
        after.records.map((d) => d.code),
        ['D1'],
      );
      assert.match(after.records[0].acknowledged_at, DATE_TIME);
      assert.equal(after.records[0].items.length, 2);
      // Acknowledging again changes nothing.
      await tenant.post('/v1/deliveries/acknowledge', ['D1']);
      assert.deepEqual((await drain(tenant, 'deliveries', after.next)).records, []);
    });

    test('pages by limit: each record once, hasMore until the end, the start cursor of an empty feed', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const empty = await changes(tenant, 'resource=products');
      assert.deepEqual(empty.data, []);
      assert.equal(empty.hasMore, false);
      const codes = Array.from({ length: 25 }, (_, n) => `P${String(n).padStart(2, '0')}`);
      await seed(tenant, codes.slice(0, 12));
      await seed(tenant, codes.slice(12));
      const walked = await drain(tenant, 'products', empty.next, 10);
      assert.deepEqual(
        walked.pages.map((page) => page.length),
        [10, 10, 5],
      );
      assert.deepEqual(
        walked.records.map((p) => p.code),
        codes,
        'commit order, then key',
      );
      // A page that takes exactly the last records says so: no empty page after it.
      assert.deepEqual(
        (await drain(tenant, 'products', empty.next, 5)).pages.map((page) => page.length),
        [5, 5, 5, 5, 5],
      );
      const limits = await changes(tenant, 'resource=products&limit=1000');
      assert.equal(limits.data.length, 25);
      assert.equal((await changes(tenant, 'resource=products&limit=1')).data.length, 1);
      // Composite and numeric keys page too (factors: product_code + unit).
      await load(
        tenant,
        '/api/factors/batch-create',
        ['0.5', '12.5', '2', '100'].map((unit) => ({ product_code: 'P00', unit, description: 'BOX' })),
      );
      const factors = await drain(tenant, 'factors', undefined, 1);
      assert.deepEqual(
        factors.records.map((f) => f.unit),
        [0.5, 2, 12.5, 100],
      );
    });

    test('limit defaults to 100', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await seed(
        tenant,
        Array.from({ length: 101 }, (_, n) => `P${String(n).padStart(3, '0')}`),
      );
      const page = await changes(tenant, 'resource=products');
      assert.equal(page.data.length, 100);
      assert.equal(page.hasMore, true);
      const rest = await changes(tenant, `resource=products&after=${page.next}`);
      assert.deepEqual(
        rest.data.map((p) => p.code),
        ['P100'],
      );
      assert.equal(rest.hasMore, false);
    });

    test('an upsert of master data moves the record to the end of its feed, with updated_at', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await seed(tenant, ['P1', 'P2']);
      await load(tenant, '/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L1', price: '10.00' },
        { product_code: 'P2', price_list: 'L1', price: '20.00' },
      ]);
      const products = await drain(tenant, 'products');
      const prices = await drain(tenant, 'prices');
      await load(tenant, '/api/products/batch-create', [{ code: 'P1', description: 'renamed' }]);
      await load(tenant, '/api/prices/batch-create', [
        { product_code: 'P2', price_list: 'L1', price: '25.50' },
      ]);
      const movedProducts = (await drain(tenant, 'products', products.next)).records;
      assert.deepEqual(
        movedProducts.map((p) => [p.code, p.description]),
        [['P1', 'renamed']],
      );
      assert.match(movedProducts[0].updated_at, DATE_TIME);
      const movedPrices = (await drain(tenant, 'prices', prices.next)).records;
      assert.deepEqual(
        movedPrices.map((p) => [p.product_code, Number(p.price)]),
        [['P2', 25.5]],
      );
      assert.match(movedPrices[0].updated_at, DATE_TIME);
    });

    test('parameters: resource required and known, limit 1 to 1000, after a cursor of this resource', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await seed(tenant, ['P1']);
      const products = await changes(tenant, 'resource=products');
      const bad = async (query: string, field: string) => {
        const { status, body } = await tenant.get(`/v1/changes?${query}`);
        problem(status, body, field);
      };
      await bad('', 'resource');
      await bad('resource=orders', 'resource');
      await bad('resource=products&limit=0', 'limit');
      await bad('resource=products&limit=1001', 'limit');
      await bad('resource=products&limit=ten', 'limit');
      await bad('resource=products&after=', 'after');
      await bad('resource=products&after=not%20a%20cursor', 'after');
      await bad(`resource=products&after=${Buffer.from('{not json').toString('base64url')}`, 'after');
      await bad(`resource=products&after=${cursorOf([1, 2])}`, 'after');
      await bad(`resource=products&after=${cursorOf({ r: 'products', x: 'abc', k: ['P1'] })}`, 'after');
      await bad(
        `resource=products&after=${cursorOf({ r: 'products', x: '18446744073709551616', k: ['P1'] })}`,
        'after',
      );
      await bad(`resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P1', 'x'] })}`, 'after');
      await bad(`resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P\u0000'] })}`, 'after');
      // A lone surrogate would compare as U+FFFD; a field this service never writes: not its cursor.
      await bad(`resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P\ud800'] })}`, 'after');
      await bad(
        `resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P1'], extra: 1 })}`,
        'after',
      );
      await bad(`resource=factors&after=${cursorOf({ r: 'factors', x: '5', k: ['P1', 'one'] })}`, 'after');
      // A generation (after a restore: src/sql/feed-positions.ts) is a whole number from 1; one this
      // feed is not at is refused as from before the renumbering.
      for (const g of [0, 1.5, '1', null]) {
        await bad(`resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P1'], g })}`, 'after');
      }
      const stale = await tenant.get(
        `/v1/changes?resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P1'], g: 7 })}`,
      );
      assert.deepEqual(stale.body.errors, [{ field: 'after', message: STALE_AFTER_MESSAGE }]);
      await bad(`resource=products&after=${'A'.repeat(1025)}`, 'after');
      // Another resource's cursor.
      await bad(`resource=stocks&after=${products.next}`, 'after');
      await bad(`resource=products&limit=5&limt=3`, 'limt');
      // The time a cursor was handed out ("t") is whole microseconds since 1970, as text.
      for (const t of [0, '0', '-5', '1.5', '1e9', 'x', '1234567890123456789', null]) {
        await bad(`resource=products&after=${cursorOf({ r: 'products', x: '5', k: ['P1'], t })}`, 'after');
      }
      // A position ahead of every transaction the database has numbered is from a history it does not
      // have (a restore to an earlier point: test/feed/feed-restore.test.ts): refused, never an empty page.
      const far = cursorOf({ r: 'products', x: '18446744073709551615', k: ['P1'] });
      const ahead = await tenant.get(`/v1/changes?resource=products&after=${far}`);
      assert.equal(ahead.status, 400);
      assert.deepEqual(ahead.body.errors, [{ field: 'after', message: RESTORED_AFTER_MESSAGE }]);
    });

    test('a cursor from before its hand-out time was recorded (no t) reads on after the upgrade', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await seed(tenant, ['U1', 'U2']);
      const { next } = await drain(tenant, 'products');
      // What migration 013 leaves: the rows there before it carry '-infinity', and the cursors handed
      // out before it no time.
      await db.query("UPDATE products SET changed_at = '-infinity' WHERE tenant_id = $1", [
        tenant.tenant.tenantId,
      ]);
      const { t, ...before } = JSON.parse(Buffer.from(next, 'base64url').toString('utf8'));
      assert.match(t, /^\d+$/);
      const old = cursorOf(before);
      assert.deepEqual((await changes(tenant, `resource=products&after=${old}`)).data, []);
      await seed(tenant, ['U1', 'U3']);
      assert.deepEqual(
        (await changes(tenant, `resource=products&after=${old}`)).data.map((p) => p.code),
        ['U3'],
      );
      // A row behind such a cursor that changed since was written in another history: refused.
      await db.query("UPDATE products SET changed_at = now() WHERE tenant_id = $1 AND code = 'U2'", [
        tenant.tenant.tenantId,
      ]);
      const refused = await tenant.get(`/v1/changes?resource=products&after=${old}`);
      assert.deepEqual(refused.body.errors, [{ field: 'after', message: RESTORED_AFTER_MESSAGE }]);
    });

    test("isolation: another tenant's records never appear, whatever cursor is sent", async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      await seed(a, ['A1', 'A2', 'A3']);
      await seed(b, ['B1']);
      const aPages = await drain(a, 'products', undefined, 1);
      const bAll = await drain(b, 'products');
      assert.deepEqual(
        bAll.records.map((p) => p.code),
        ['B1'],
      );
      // Every cursor A was handed, and made-up ones at the bottom of the feed: B reads B's rows only.
      const cursors = [
        ...aPages.cursors,
        cursorOf({ r: 'products', x: '0', k: null }),
        cursorOf({ r: 'products', x: '0', k: [''] }),
      ];
      for (const cursor of cursors) {
        const seen = await drain(b, 'products', cursor);
        for (const record of seen.records) assert.equal(record.code, 'B1');
      }
      for (const record of aPages.records) assert.match(record.code, /^A/);
    });
  });
}
