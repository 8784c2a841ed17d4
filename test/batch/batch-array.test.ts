import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChoiceField, DecimalField, TextField } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { statusAndBody } from '../helpers/answer.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { BATCH_ENDPOINTS, type BatchEndpoint, batchEndpoint } from '../helpers/batch-items.js';
import { countRows, toJson } from '../helpers/batch-json.js';

/*
 * The array rules every batch endpoint shares (backoffice-api.md 4.3, 7.1 and 8), and what the body
 * must be before any item is looked at: JSON, an array, 1 to 10,000 items, within the body limit.
 */

const INVALID_JSON = { statusCode: 400, errors: [{ message: 'Invalid JSON in request body' }] };
const arrayError = (message: string) => ({
  statusCode: 400,
  errors: [{ index: null, field: null, message }],
});
const NOT_AN_ARRAY = arrayError('Request body must be an array');
const EMPTY = arrayError('Request body cannot be empty');
const TOO_MANY = arrayError('Array exceeds maximum limit of 10000 items');

const EMOJI = '😀';

function resourceOf(endpoint: BatchEndpoint): BatchResource {
  const resource = batchResources.find((r) => r.path === endpoint.path);
  assert.ok(resource, endpoint.path);
  return resource;
}

/** A fresh tenant whose product master holds P1, which the valid items of every endpoint refer to. */
async function tenantWithP1(db: Parameters<typeof appForNewTenant>[0]) {
  const tenant = await appForNewTenant(db);
  await seedProducts(tenant, ['P1']);
  return tenant;
}

/** Every field at its largest JSON text, 4-byte characters in every string: the biggest valid item. */
function largestItem(resource: BatchResource, n: number): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    switch (field.kind) {
      case 'choice':
        item[name] = (field as ChoiceField).values.reduce((a, b) => (b.length > a.length ? b : a));
        break;
      case 'text':
        item[name] = EMOJI.repeat((field as TextField).max - 1) + String.fromCodePoint(0x10000 + n);
        break;
      case 'decimal': {
        const { precision, scale } = field as DecimalField;
        item[name] = `-${'9'.repeat(precision - scale)}${scale ? `.${'9'.repeat(scale)}` : ''}`;
        break;
      }
      case 'integer':
        item[name] = -2147483648;
        break;
      default:
        // The master data resources of BATCH_ENDPOINTS have no other kind of field today.
        assert.fail(`${resource.name}.${name}: no largest value written for a ${field.kind} field`);
    }
  }
  return item;
}

for (const backend of backends()) {
  describe(`batch array rules on ${backend.name}`, () => {
    test('a body that is not JSON: 400 with exactly the spec body, on every endpoint', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const bodies = [
        '',
        '   ',
        '[',
        '[{',
        '{"code":',
        'nope',
        '[1,]',
        '[{"a":1,}]',
        "[{'a':1}]",
        '[] []',
        '[NaN]',
        '[01]',
        '[{"a":"line\nbreak"}]',
        '[{"a":12345678901234567,}]', // a long number: the lossless parser must refuse it too
        '[12345678901234567] x',
      ];
      for (const endpoint of BATCH_ENDPOINTS) {
        // Every body on one endpoint; on the others, a few (the parser is shared).
        for (const body of endpoint.name === 'stocks'
          ? bodies
          : bodies.slice(1, 4).concat(bodies.slice(-2))) {
          const response = await tenant.post(endpoint.path, body);
          assert.deepEqual(
            statusAndBody(response),
            { status: 400, body: INVALID_JSON },
            `${endpoint.name}: ${JSON.stringify(body)}`,
          );
        }
      }
    });

    test('a body that is JSON but not an array, or an empty array: 400, index and field null', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      for (const endpoint of BATCH_ENDPOINTS) {
        for (const body of [
          '{}',
          toJson(endpoint.valid(0)),
          '"text"',
          '5',
          '12345678901234567.5',
          'null',
          'true',
        ]) {
          const response = await tenant.post(endpoint.path, body);
          assert.deepEqual(
            statusAndBody(response),
            { status: 400, body: NOT_AN_ARRAY },
            `${endpoint.name}: ${body}`,
          );
        }
        for (const body of ['[]', ' [ ] ', '[\n]']) {
          const response = await tenant.post(endpoint.path, body);
          assert.deepEqual(
            statusAndBody(response),
            { status: 400, body: EMPTY },
            `${endpoint.name}: ${JSON.stringify(body)}`,
          );
        }
      }
    });

    test('10,001 items: 400 with the array error only; 10,000 invalid items: one error each', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      for (const endpoint of BATCH_ENDPOINTS) {
        const tooMany = await tenant.post(endpoint.path, `[${'{},'.repeat(10_000)}{}]`);
        assert.deepEqual(statusAndBody(tooMany), { status: 400, body: TOO_MANY }, endpoint.name);
        const validButTooMany = Array.from({ length: 10_001 }, (_, n) => endpoint.valid(n));
        assert.deepEqual(statusAndBody(await tenant.post(endpoint.path, validButTooMany)), {
          status: 400,
          body: TOO_MANY,
        });
      }
      const endpoint = batchEndpoint('payment-methods');
      const full = await tenant.post(endpoint.path, `[${'{},'.repeat(9_999)}{}]`);
      assert.equal(full.status, 400);
      assert.equal(full.body.errors.length, 10_000, '10,000 items are validated, not refused as too many');
      const last = full.body.errors[9_999];
      assert.equal(last.index, 9_999);
      assert.deepEqual(
        [...last.errors].sort((a: any, b: any) => a.field.localeCompare(b.field)),
        [
          { field: 'code', message: 'Field is required' },
          { field: 'description', message: 'Field is required' },
        ],
      );
    });

    for (const endpoint of BATCH_ENDPOINTS) {
      test(`${endpoint.name}: 10,000 valid items are all written`, async () => {
        const db = await backend.db();
        const tenant = await tenantWithP1(db);
        const table = resourceOf(endpoint).table;
        const before = await countRows(db, table, tenant.tenant.tenantId);
        const items = Array.from({ length: 10_000 }, (_, n) => endpoint.valid(n));
        const response = await tenant.post(endpoint.path, items);
        assert.equal(response.status, 201, JSON.stringify(response.body).slice(0, 1000));
        assert.equal(response.body.statusCode, 201);
        assert.equal(response.body.created, 10_000);
        assert.equal((await countRows(db, table, tenant.tenant.tenantId)) - before, 10_000);
      });
    }

    test('a body over the endpoint limit: 413 and nothing written; exactly at the limit: accepted', async () => {
      const db = await backend.db();
      const tenant = await tenantWithP1(db);
      for (const endpoint of BATCH_ENDPOINTS) {
        const resource = resourceOf(endpoint);
        const before = await countRows(db, resource.table, tenant.tenant.tenantId);
        const head = `[${toJson(endpoint.valid(1))}`;
        const padded = (size: number) => `${head}${' '.repeat(size - head.length - 1)}]`;
        const over = await tenant.post(endpoint.path, padded(resource.bodyLimit + 1));
        assert.equal(over.status, 413, endpoint.name);
        assert.equal(over.body.statusCode, 413);
        assert.equal(over.body.errors.length, 1);
        assert.equal(typeof over.body.errors[0].message, 'string');
        assert.equal(await countRows(db, resource.table, tenant.tenant.tenantId), before, 'nothing written');
        const at = await tenant.post(endpoint.path, padded(resource.bodyLimit));
        assert.equal(at.status, 201, `${endpoint.name}: ${JSON.stringify(at.body)}`);
        assert.equal(await countRows(db, resource.table, tenant.tenant.tenantId), before + 1);
      }
    });

    test('a full batch of the largest valid items, pretty-printed, fits every body limit', async () => {
      // Only 201, 400 and 500 are spec statuses: a valid batch must never get a 413.
      for (const endpoint of BATCH_ENDPOINTS) {
        const resource = resourceOf(endpoint);
        const items = Array.from({ length: 10_000 }, (_, n) => largestItem(resource, n));
        const bytes = Buffer.byteLength(JSON.stringify(items, null, 2));
        assert.ok(
          bytes <= resource.bodyLimit,
          `${endpoint.name}: ${bytes} bytes > limit ${resource.bodyLimit}`,
        );
      }
      const endpoint = batchEndpoint('payment-methods');
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const items = Array.from({ length: 10_000 }, (_, n) => largestItem(resourceOf(endpoint), n));
      const response = await tenant.post(endpoint.path, JSON.stringify(items, null, 2));
      assert.equal(response.status, 201, JSON.stringify(response.body).slice(0, 1000));
      assert.equal(response.body.created, 10_000);
    });

    test('a Content-Type other than application/json: 415 and nothing written', async () => {
      const db = await backend.db();
      const tenant = await tenantWithP1(db);
      for (const endpoint of BATCH_ENDPOINTS) {
        const table = resourceOf(endpoint).table;
        const before = await countRows(db, table, tenant.tenant.tenantId);
        const body = toJson([endpoint.valid(1)]);
        for (const type of [
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/jsonx',
        ]) {
          const response = await tenant.post(endpoint.path, body, { 'content-type': type });
          assert.equal(response.status, 415, `${endpoint.name}: ${type}`);
          assert.equal(response.body.statusCode, 415);
          assert.equal(typeof response.body.errors[0].message, 'string');
        }
        // The test client always sends a Content-Type; undefined takes it away.
        const none = await tenant.post(endpoint.path, body, {
          'content-type': undefined as unknown as string,
        });
        assert.equal(none.status, 415, `${endpoint.name}: no Content-Type`);
        assert.equal(await countRows(db, table, tenant.tenant.tenantId), before, 'nothing written');
        const charset = await tenant.post(endpoint.path, body, {
          'content-type': 'application/json; charset=utf-8',
        });
        assert.equal(charset.status, 201, `${endpoint.name}: a charset parameter is still JSON`);
      }
    });

    test('"__proto__" and "constructor" keys are unknown fields and pollute nothing', async () => {
      const db = await backend.db();
      const longNumber = '12345678901234567'; // forces the lossless parser
      const tenant = await tenantWithP1(db);
      for (const endpoint of BATCH_ENDPOINTS) {
        const table = resourceOf(endpoint).table;
        const before = await countRows(db, table, tenant.tenant.tenantId);
        for (const payload of ['"yes"', longNumber]) {
          const valid = toJson(endpoint.valid(1));
          const body = `[${valid.slice(0, -1)},"__proto__":{"polluted":${payload}},"constructor":{"prototype":{"polluted":${payload}}}}]`;
          const response = await tenant.post(endpoint.path, body);
          assert.equal(response.status, 400, `${endpoint.name}: ${JSON.stringify(response.body)}`);
          assert.equal(response.body.errors.length, 1);
          assert.equal(response.body.errors[0].index, 0);
          assert.deepEqual(
            [...response.body.errors[0].errors].sort((a: any, b: any) => a.field.localeCompare(b.field)),
            [
              { field: '__proto__', message: 'Unknown field' },
              { field: 'constructor', message: 'Unknown field' },
            ],
            endpoint.name,
          );
          assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
          assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
          assert.equal(await countRows(db, table, tenant.tenant.tenantId), before);
        }
      }
      // A valid item hidden behind "__proto__" is not an item with those fields.
      const stocks = batchEndpoint('stocks');
      for (const tail of ['', ',"quantity":12345678901234567']) {
        const hidden = await tenant.post(
          stocks.path,
          `[{"__proto__":{"product_code":"P1","location":"W1"${tail}}}]`,
        );
        assert.equal(hidden.status, 400);
        assert.deepEqual(
          [...hidden.body.errors[0].errors].sort((a: any, b: any) => a.field.localeCompare(b.field)),
          [
            { field: '__proto__', message: 'Unknown field' },
            { field: 'location', message: 'Field is required' },
            { field: 'product_code', message: 'Field is required' },
          ],
        );
      }
    });

    test('long JSON numbers are stored with every digit', async () => {
      const db = await backend.db();
      const stocks = batchEndpoint('stocks');
      const tenant = await tenantWithP1(db);
      const values = [
        ['A', '1234567890123456.78', '1234567890123456.78'],
        ['B', '-1234567890123456.78', '-1234567890123456.78'],
        ['C', '1.23456789012345678e15', '1234567890123456.78'],
        ['D', '123456789012345678E-2', '1234567890123456.78'],
        ['E', '9999999999999999.99', '9999999999999999.99'],
        ['F', '1000000000000000.01', '1000000000000000.01'],
        ['G', '0.01', '0.01'],
      ] as const;
      const body = `[${values.map(([location, n]) => `{"product_code":"P1","location":"${location}","quantity":${n}}`).join(',')}]`;
      const response = await tenant.post(stocks.path, body);
      assert.equal(response.status, 201, JSON.stringify(response.body));
      const rows = await db.query<{ location: string; quantity: string }>(
        'SELECT location, quantity::text AS quantity FROM stocks WHERE tenant_id = $1 ORDER BY location',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(
        rows,
        values.map(([location, , stored]) => ({ location, quantity: stored })),
      );

      // Two units a float cannot tell apart (both 1234567890123456.75 as doubles) are two keys.
      const factors = await tenant.post(
        '/api/factors/batch-create',
        '[{"product_code":"P1","unit":1234567890123456.78,"description":"a"},' +
          '{"product_code":"P1","unit":1234567890123456.79,"description":"b"}]',
      );
      assert.equal(factors.status, 201, JSON.stringify(factors.body));
      assert.equal(factors.body.created, 2);
      const units = await db.query<{ unit: string }>(
        'SELECT unit::text AS unit FROM factors WHERE tenant_id = $1 ORDER BY unit',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(
        units.map((u) => u.unit),
        ['1234567890123456.78', '1234567890123456.79'],
      );
    });

    test('a number too small for a float is refused, not stored as 0 (no long number in the body)', async () => {
      const db = await backend.db();
      const stocks = batchEndpoint('stocks');
      const tenant = await tenantWithP1(db);
      const response = await tenant.post(
        stocks.path,
        '[{"product_code":"P1","location":"A","quantity":1e-400},{"product_code":"P1","location":"B","quantity":-1e-400}]',
      );
      assert.deepEqual(statusAndBody(response), {
        status: 400,
        body: {
          statusCode: 400,
          errors: [
            {
              index: 0,
              errors: [{ field: 'quantity', message: 'Field exceeds maximum of 2 decimal places' }],
            },
            {
              index: 1,
              errors: [{ field: 'quantity', message: 'Field exceeds maximum of 2 decimal places' }],
            },
          ],
        },
      });
      assert.equal(await countRows(db, 'stocks', tenant.tenant.tenantId), 0);
    });

    test('a repeated key in an item: the same answer with or without a long number in the body', async () => {
      // Valid JSON (RFC 8259 only says names SHOULD be unique), so never "Invalid JSON in request body".
      const db = await backend.db();
      const tenant = await tenantWithP1(db);
      const short = await tenant.post(
        '/api/stocks/batch-create',
        '[{"product_code":"P1","location":"A","location":"B","quantity":1.5}]',
      );
      const long = await tenant.post(
        '/api/stocks/batch-create',
        '[{"product_code":"P1","location":"C","location":"D","quantity":1234567890123456.78}]',
      );
      assert.equal(short.status, 201, JSON.stringify(short.body));
      assert.equal(long.status, 201, JSON.stringify(long.body));
    });

    test('deeply nested JSON is a 400, and the service keeps answering', async () => {
      const db = await backend.db();
      const endpoint = batchEndpoint('payment-methods');
      const tenant = await tenantWithP1(db);
      const depth = 100_000;
      for (const inner of ['', '12345678901234567', '{"a":1}']) {
        const response = await tenant.post(endpoint.path, `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`);
        assert.equal(response.status, 400, JSON.stringify(response.body).slice(0, 500));
      }
      const objects = await tenant.post(endpoint.path, `[${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}]`);
      assert.equal(objects.status, 400);
      const after = await tenant.post(endpoint.path, [endpoint.valid(1)]);
      assert.equal(after.status, 201);
    });
  });
}
