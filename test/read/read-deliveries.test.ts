import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import { statusAndBody } from '../helpers/answer.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { at, DELIVERY_FIELDS, delivery, ITEM_FIELDS, item } from '../helpers/read-data.js';

async function load(tenant: TenantClient, items: unknown[]) {
  const response = await tenant.post('/api/deliveries/batch-create', items);
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body;
}

const codesOf = (body: any) => body.data.map((d: { code: string }) => d.code);

for (const backend of backends()) {
  describe(`deliveries on ${backend.name}`, () => {
    test('every field of sections 2.2 and 2.3; voucher and signature strings; items always an array, in order', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        delivery('D1', {
          reported_at: at(3),
          latitude: '4.1234567',
          weight: '12.5',
          voucher: 'https://example.test/v/1.jpg',
          items: [item(2, { discount1: '7.5' }), item(1, { product_quantity: '1234567890123456.78' })],
        }),
        delivery('D2', { reported_at: at(2) }),
      ]);
      const { status, body } = await tenant.get('/v1/deliveries/pending');
      assert.equal(status, 200);
      for (const d of body.data) assert.deepEqual(Object.keys(d), DELIVERY_FIELDS);
      const [d1, d2] = body.data;
      assert.equal(d1.code, 'D1');
      assert.equal(d1.reported_at, '2026-01-03T12:00:00');
      assert.equal(d1.scheduled_date, '2026-01-10T08:00:00');
      assert.equal(d1.latitude, 4.1234567);
      assert.equal(d1.voucher, 'https://example.test/v/1.jpg');
      assert.equal(d1.signature, '', 'empty string when none');
      assert.deepEqual(
        d1.items.map((i: any) => i.item_number),
        [1, 2],
      );
      for (const i of d1.items) assert.deepEqual(Object.keys(i), ITEM_FIELDS);
      assert.equal(d1.items[1].discount1, 7.5);
      assert.equal(d1.items[0].charge_values, null);
      assert.deepEqual(d2.items, []);
      assert.equal(d2.voucher, '');
      assert.equal(d2.news, null);
    });

    test('default sort is reported date descending, nulls last; ascending puts them first; code breaks ties', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        delivery('N1'),
        delivery('A', { reported_at: at(1) }),
        delivery('B', { reported_at: at(2) }),
        delivery('C', { reported_at: at(2) }),
        delivery('N2'),
      ]);
      assert.deepEqual(codesOf((await tenant.get('/v1/deliveries/pending')).body), [
        'C',
        'B',
        'A',
        'N2',
        'N1',
      ]);
      assert.deepEqual(codesOf((await tenant.get('/v1/deliveries/pending?sort=reported_at')).body), [
        'N1',
        'N2',
        'A',
        'B',
        'C',
      ]);
      const paged: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const { body } = await tenant.get(`/v1/deliveries/pending?limit=2&page=${page}`);
        assert.equal(body.meta.totalPages, 3);
        paged.push(...codesOf(body));
      }
      assert.deepEqual(paged, ['C', 'B', 'A', 'N2', 'N1']);
    });

    test('past the first page, each delivery still comes with its items and every field', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        delivery('P1', { reported_at: at(2), items: [item(1), item(2)] }),
        delivery('P2', { reported_at: at(1), items: [item(1, { product_code: 'ONLY' })] }),
      ]);
      const second = await tenant.get('/v1/deliveries/pending?limit=1&page=2');
      assert.deepEqual(codesOf(second.body), ['P2']);
      assert.deepEqual(Object.keys(second.body.data[0]), DELIVERY_FIELDS);
      assert.deepEqual(
        second.body.data[0].items.map((i: any) => i.product_code),
        ['ONLY'],
      );
      assert.equal(second.body.data[0].reported_at, '2026-01-01T12:00:00');
    });

    test('filters client_id, seller_id, reported_from, kept in the links', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        delivery('X1', { client_id: 'CA', seller_id: 'S1', reported_at: at(5) }),
        delivery('X2', { client_id: 'CA', seller_id: 'S2', reported_at: at(6) }),
        delivery('X3', { client_id: 'CB', seller_id: 'S1', reported_at: at(7) }),
      ]);
      const codes = async (q: string) => codesOf((await tenant.get(`/v1/deliveries/pending?${q}`)).body);
      assert.deepEqual(await codes('client_id=CA'), ['X2', 'X1']);
      assert.deepEqual(await codes('seller_id=S1'), ['X3', 'X1']);
      assert.deepEqual(await codes('reported_from=2026-01-06'), ['X3', 'X2']);
      assert.deepEqual(await codes('client_id=CA&seller_id=S1'), ['X1']);
      const { body } = await tenant.get('/v1/deliveries/pending?seller_id=S1&limit=1');
      assert.match(body.links.next, /\?seller_id=S1&sort=-reported_at&page=2&limit=1$/);
    });

    test('invalid parameters: 400 naming the parameter; limit up to 500', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const cases: [string, string, string][] = [
        ['limit=501', 'limit', 'Parameter must be an integer from 1 to 500'],
        ['page=-1', 'page', 'Parameter must be an integer of at least 1'],
        ['reported_from=2026-1-01', 'reported_from', 'Parameter must be a date in the format YYYY-MM-DD'],
        ['sort=-created_at', 'sort', 'Parameter must be one of reported_at, -reported_at'],
        [`seller_id=${'s'.repeat(19)}`, 'seller_id', 'Parameter exceeds maximum length of 18 characters'],
      ];
      for (const [query, field, message] of cases) {
        const response = await tenant.get(`/v1/deliveries/pending?${query}`);
        assert.deepEqual(
          statusAndBody(response),
          { status: 400, body: { statusCode: 400, errors: [{ field, message }] } },
          query,
        );
      }
      assert.equal((await tenant.get('/v1/deliveries/pending?limit=500')).status, 200);
    });

    test('acknowledge removes only the given deliveries, reports unknown codes, and is idempotent', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const other = await appForNewTenant(db);
      await load(tenant, [delivery('K1'), delivery('K2'), delivery('K3')]);
      await load(other, [delivery('K1'), delivery('THEIRS')]);
      const ack = await tenant.post('/v1/deliveries/acknowledge', ['K1', 'K3', 'NOPE', 'THEIRS', 'K1']);
      assert.deepEqual(statusAndBody(ack), {
        status: 200,
        body: {
          statusCode: 200,
          message: 'Deliveries acknowledged',
          acknowledged: 2,
          notFound: ['NOPE', 'THEIRS'],
        },
      });
      assert.deepEqual(codesOf((await tenant.get('/v1/deliveries/pending')).body), ['K2']);
      assert.deepEqual(codesOf((await other.get('/v1/deliveries/pending?sort=reported_at')).body).sort(), [
        'K1',
        'THEIRS',
      ]);
      const again = await tenant.post('/v1/deliveries/acknowledge', ['K1']);
      assert.deepEqual(again.body, {
        statusCode: 200,
        message: 'Deliveries acknowledged',
        acknowledged: 1,
        notFound: [],
      });
    });

    test('acknowledge follows the batch array rules', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const post = (body: unknown) => tenant.post('/v1/deliveries/acknowledge', body);
      assert.deepEqual((await post('{')).body, {
        statusCode: 400,
        errors: [{ message: 'Invalid JSON in request body' }],
      });
      assert.deepEqual((await post({ code: 'x' })).body.errors, [
        { index: null, field: null, message: 'Request body must be an array' },
      ]);
      assert.deepEqual((await post([])).body.errors, [
        { index: null, field: null, message: 'Request body cannot be empty' },
      ]);
      assert.deepEqual((await post(Array.from({ length: 10_001 }, (_, n) => `C${n}`))).body.errors, [
        { index: null, field: null, message: 'Array exceeds maximum limit of 10000 items' },
      ]);
      const bad = await post(['ok', 5, '', 'x'.repeat(31)]);
      assert.equal(bad.status, 400);
      assert.deepEqual(
        bad.body.errors.map((e: any) => e.index),
        [1, 2, 3],
      );
    });

    test('a delivery that exists is ignored with its items; items are validated with their path', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const first = await load(tenant, [delivery('E1', { items: [item(1)] })]);
      assert.deepEqual([first.created, first.ignored], [1, 0]);
      const second = await load(tenant, [
        delivery('E1', { items: [item(1), item(2)] }),
        delivery('E2', { items: [item(1)] }),
      ]);
      assert.deepEqual([second.created, second.updated, second.ignored], [1, 0, 1]);
      const [count] = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM delivery_items WHERE tenant_id = $1 AND delivery_code = 'E1'",
        [tenant.tenant.tenantId],
      );
      assert.equal(count!.n, 1, 'the existing delivery keeps its items');

      const invalid = await tenant.post('/api/deliveries/batch-create', [
        delivery('E3', { items: [item(1), item(1, { product_code: '' }), 'x', item(3, { extra: 1 })] }),
        delivery('E4', { items: 'none', voucher: 5 }),
      ]);
      assert.equal(invalid.status, 400);
      assert.deepEqual(invalid.body.errors, [
        {
          index: 0,
          errors: [
            { field: 'items[1].product_code', message: 'Field is required' },
            { field: 'items[1].item_number', message: 'Field must be unique within the items of one record' },
            { field: 'items[2]', message: 'Item must be an object' },
            { field: 'items[3].extra', message: 'Unknown field' },
          ],
        },
        {
          index: 1,
          errors: [
            { field: 'voucher', message: 'Field must be a string' },
            { field: 'items', message: 'Field must be an array' },
          ],
        },
      ]);
      const [deliveries] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM deliveries WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      assert.equal(deliveries!.n, 2, 'the invalid batch wrote nothing');
    });
  });
}
