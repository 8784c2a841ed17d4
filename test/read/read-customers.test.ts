import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import { statusAndBody } from '../helpers/answer.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { at, CUSTOMER_FIELDS, customer } from '../helpers/read-data.js';

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

async function load(tenant: TenantClient, items: unknown[] | string) {
  const response = await tenant.post('/api/customers/batch-create', items);
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body;
}

/** Follows next links from page 1 and returns every code seen, in order. */
async function walk(tenant: TenantClient, first: string): Promise<string[]> {
  const codes: string[] = [];
  let url: string | null = first;
  for (let guard = 0; url && guard < 100; guard++) {
    const response = await tenant.get(url.replace(/^https?:\/\/[^/]+/, ''));
    assert.equal(response.status, 200);
    codes.push(...response.body.data.map((c: { code: string }) => c.code));
    url = response.body.links.next;
  }
  return codes;
}

for (const backend of backends()) {
  describe(`GET /v1/customers on ${backend.name}`, () => {
    test('every field of section 2.1 in every object; nulls, DateTime and numbers as the spec says', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        customer('FULL', {
          quota: '1234567890123456.78',
          latitude: '4.6097100',
          longitude: -74.0817,
          block_sales: 'N',
          visit_priority: 'high',
          time_window_start: '08:00',
          created_at: at(5),
          georeferenced_source: 'LUPAP',
          creation_source: 3,
          approval_state: 2,
        }),
        customer('MIN', { created_at: at(4) }),
      ]);
      const { body } = await tenant.get('/v1/customers');
      assert.deepEqual(Object.keys(body), ['data', 'meta', 'links']);
      for (const c of body.data) assert.deepEqual(Object.keys(c), CUSTOMER_FIELDS);
      const [full, min] = body.data;
      assert.equal(full.code, 'FULL', 'default sort: newest first');
      assert.equal(full.created_at, '2026-01-05T12:00:00');
      assert.equal(typeof full.quota, 'number', 'a JSON number (its exact text is checked in the next test)');
      assert.equal(full.term, 30);
      assert.equal(full.latitude, 4.60971);
      assert.equal(full.visit_priority, 'high');
      assert.equal(full.creation_source, 3);
      assert.equal(min.email, null);
      assert.equal(min.updated_at, null);
      assert.equal(min.block_sales, null);
      assert.match(min.created_at, DATE_TIME);
    });

    test('numbers keep every digit in the response text', async () => {
      const tenant = await appForNewTenant(await backend.db());
      // Sent as text: a JavaScript number literal would already have lost the last digits.
      const body = JSON.stringify([customer('BIG', { quota: '9999999999999999.99', real_quota: 0 })]).replace(
        '"real_quota":0',
        '"real_quota":1234567890123456.78',
      );
      await load(tenant, body);
      const raw = await rawGet(tenant, '/v1/customers');
      assert.match(raw, /"quota":9999999999999999\.99/);
      assert.match(raw, /"real_quota":1234567890123456\.78/);
    });

    test('paging over 23 customers by 5, both sorts: meta, links, no row repeated or skipped', async () => {
      const tenant = await appForNewTenant(await backend.db());
      // Two share a creation date with others: the code breaks the tie.
      const items = Array.from({ length: 23 }, (_, n) =>
        customer(`C${String(n).padStart(2, '0')}`, { created_at: at(1 + Math.floor(n / 2)) }),
      );
      await load(tenant, items);
      const descending = [...items]
        .sort((a, b) =>
          a.created_at === b.created_at
            ? String(b.code).localeCompare(String(a.code))
            : String(b.created_at).localeCompare(String(a.created_at)),
        )
        .map((c) => c.code);

      const first = await tenant.get('/v1/customers?limit=5');
      assert.deepEqual(first.body.meta, {
        totalItems: 23,
        itemCount: 5,
        itemsPerPage: 5,
        totalPages: 5,
        currentPage: 1,
      });
      assert.equal(first.body.links.prev, null);
      assert.match(first.body.links.self, /^http:\/\/[^/]+\/v1\/customers\?sort=-created_at&page=1&limit=5$/);
      assert.match(first.body.links.first, /\?sort=-created_at&page=1&limit=5$/);
      assert.match(first.body.links.last, /\?sort=-created_at&page=5&limit=5$/);
      assert.match(first.body.links.next, /\?sort=-created_at&page=2&limit=5$/);

      const last = await tenant.get('/v1/customers?limit=5&page=5');
      assert.deepEqual(last.body.meta, {
        totalItems: 23,
        itemCount: 3,
        itemsPerPage: 5,
        totalPages: 5,
        currentPage: 5,
      });
      assert.equal(last.body.links.next, null);
      assert.match(last.body.links.prev, /page=4&limit=5$/);

      assert.deepEqual(await walk(tenant, '/v1/customers?limit=5'), descending);
      assert.deepEqual(
        await walk(tenant, '/v1/customers?limit=5&sort=created_at'),
        [...descending].reverse(),
      );

      const beyond = await tenant.get('/v1/customers?limit=5&page=9');
      assert.deepEqual(beyond.body.data, []);
      assert.equal(beyond.body.meta.itemCount, 0);
      assert.equal(beyond.body.links.next, null);
    });

    test('filters, and links that keep them', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, [
        customer('A', { created_at: at(1), updated_at: at(20) }),
        customer('B', { created_at: at(10) }),
        customer('C', { created_at: at(15), updated_at: at(16) }),
      ]);
      const codes = async (query: string) =>
        (await tenant.get(`/v1/customers${query}`)).body.data.map((c: any) => c.code);
      assert.deepEqual(await codes('?client_id=B'), ['B']);
      assert.deepEqual(await codes('?client_id=b'), [], 'codes are case-sensitive');
      assert.deepEqual(await codes('?created_from=2026-01-10'), ['C', 'B']);
      assert.deepEqual(await codes('?modified_from=2026-01-16'), ['C', 'A']);
      assert.deepEqual(await codes('?modified_from=2026-01-17'), ['A']);
      const filtered = await tenant.get('/v1/customers?created_from=2026-01-01&sort=created_at&limit=1');
      assert.equal(filtered.body.meta.totalItems, 3);
      assert.match(filtered.body.links.next, /\?created_from=2026-01-01&sort=created_at&page=2&limit=1$/);
    });

    test('upsert keeps created_at and sets updated_at to now unless given', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await load(tenant, [customer('U1', { created_at: at(1) }), customer('U2', { created_at: at(2) })]);
      const second = await load(tenant, [
        customer('U1', { name: 'Renamed', created_at: at(9) }),
        customer('U2', { updated_at: at(3) }),
        customer('U3'),
      ]);
      assert.deepEqual([second.created, second.updated, second.ignored], [1, 2, 0]);
      const rows = await tenant.get('/v1/customers?sort=created_at');
      const byCode = Object.fromEntries(rows.body.data.map((c: any) => [c.code, c]));
      assert.equal(byCode.U1.name, 'Renamed');
      assert.equal(byCode.U1.created_at, '2026-01-01T12:00:00', 'creation date kept');
      assert.match(byCode.U1.updated_at, DATE_TIME);
      assert.ok(byCode.U1.updated_at > '2026-01-02', 'updated now');
      assert.equal(byCode.U2.updated_at, '2026-01-03T12:00:00', 'given modification date kept');
      assert.match(byCode.U3.created_at, DATE_TIME);
    });

    test('each invalid parameter is a 400 naming it; nothing is clamped', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const cases: [string, string, string][] = [
        ['page=0', 'page', 'Parameter must be an integer of at least 1'],
        ['page=abc', 'page', 'Parameter must be an integer of at least 1'],
        ['limit=0', 'limit', 'Parameter must be an integer from 1 to 1000'],
        ['limit=1001', 'limit', 'Parameter must be an integer from 1 to 1000'],
        ['limit=1.5', 'limit', 'Parameter must be an integer from 1 to 1000'],
        ['created_from=2026-02-30', 'created_from', 'Parameter must be a date in the format YYYY-MM-DD'],
        ['modified_from=20260101', 'modified_from', 'Parameter must be a date in the format YYYY-MM-DD'],
        ['sort=name', 'sort', 'Parameter must be one of created_at, -created_at'],
        [`client_id=${'x'.repeat(19)}`, 'client_id', 'Parameter exceeds maximum length of 18 characters'],
        ['client_id=', 'client_id', 'Parameter must not be empty'],
        ['client_id=a%00b', 'client_id', 'Parameter must not contain NUL characters'],
        ['limt=10', 'limt', 'Unknown parameter'],
        ['page=1&page=2', 'page', 'Parameter must be given once'],
      ];
      for (const [query, field, message] of cases) {
        const response = await tenant.get(`/v1/customers?${query}`);
        assert.deepEqual(
          statusAndBody(response),
          { status: 400, body: { statusCode: 400, errors: [{ field, message }] } },
          query,
        );
      }
      const ok = await tenant.get(`/v1/customers?limit=1000&client_id=${'x'.repeat(18)}`);
      assert.equal(ok.status, 200);
    });

    test('behind a trusted proxy, links use the public scheme and host; untrusted, they do not', async () => {
      const db = await backend.db();
      const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' };
      const trusted = await appForNewTenant(db, { trustProxy: true });
      const behind = await trusted.get('/v1/customers?limit=5', forwarded);
      assert.match(behind.body.links.self, /^https:\/\/api\.example\.com\/v1\/customers\?/);
      const untrusted = await appForNewTenant(db);
      const direct = await untrusted.get('/v1/customers?limit=5', forwarded);
      assert.match(direct.body.links.self, /^http:\/\/localhost(:\d+)?\/v1\/customers\?/);
    });

    test('two tenants with the same codes see only their own customers', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      await load(a, [customer('SAME', { name: 'of A' }), customer('ONLY-A')]);
      await load(b, [customer('SAME', { name: 'of B' })]);
      const seenByB = await b.get('/v1/customers');
      assert.deepEqual(
        seenByB.body.data.map((c: any) => [c.code, c.name]),
        [['SAME', 'of B']],
      );
      assert.equal(seenByB.body.meta.totalItems, 1);
      assert.deepEqual((await b.get('/v1/customers?client_id=ONLY-A')).body.data, []);
    });
  });
}

/** The exact response text (JSON.parse would round the numbers). */
async function rawGet(tenant: TenantClient, url: string): Promise<string> {
  const response = await tenant.get(url);
  assert.equal(response.status, 200);
  return response.text;
}
