import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { ApiTenant } from '../../kit/token.js';
import type { InjectTransport } from '../../kit/transport.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer } from '../helpers/read-data.js';

const CUSTOMERS = '/api/customers/batch-create';

/** The body as the client reads it once the Content-Encoding announced is undone. */
function decoded(response: LightMyRequestResponse): Buffer {
  const raw = response.rawPayload;
  switch (response.headers['content-encoding']) {
    case undefined:
      return raw;
    case 'br':
      return brotliDecompressSync(raw);
    case 'gzip':
      return gunzipSync(raw);
    default:
      throw new Error(`unexpected content-encoding ${response.headers['content-encoding']}`);
  }
}

function get(tenant: TenantClient<ApiTenant, InjectTransport>, url: string, acceptEncoding?: string) {
  const headers: Record<string, string> = { ...tenant.headers };
  if (acceptEncoding !== undefined) headers['accept-encoding'] = acceptEncoding;
  return tenant.transport.app.inject({ method: 'GET', url, headers });
}

function assertVaries(response: LightMyRequestResponse, name: string) {
  assert.match(String(response.headers.vary), /accept-encoding/i, name);
}

/** Every Accept-Encoding a client may send, and the encoding the answer must then carry. */
const NEGOTIATIONS: Array<[string | undefined, string | undefined]> = [
  [undefined, undefined],
  ['identity', undefined],
  ['deflate', undefined],
  ['br', 'br'],
  ['gzip', 'gzip'],
  ['gzip, deflate, br', 'br'],
  ['br;q=0, gzip', 'gzip'],
];

for (const backend of backends()) {
  describe(`response compression on ${backend.name}`, () => {
    test('a page is compressed as the client asks, and decodes to the very bytes of the plain one', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const { app } = tenant.transport;
      const items = Array.from({ length: 300 }, (_, n) => customer(`C${String(n).padStart(4, '0')}`));
      const created = await app.inject({
        method: 'POST',
        url: CUSTOMERS,
        headers: { ...tenant.headers, 'content-type': 'application/json', 'accept-encoding': 'br' },
        payload: JSON.stringify(items),
      });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(JSON.parse(decoded(created).toString()).statusCode, 201);

      // 300 customers take the stream path of the plugin; 4 of them (a few kB) its synchronous one.
      for (const url of ['/v1/customers?limit=1000', '/v1/customers?limit=4']) {
        const plain = await get(tenant, url);
        assert.equal(plain.statusCode, 200);
        assert.ok(plain.rawPayload.length > 4096, `${url}: ${plain.rawPayload.length} bytes`);
        assertVaries(plain, url);
        for (const [acceptEncoding, encoding] of NEGOTIATIONS) {
          const name = `${url} with ${acceptEncoding}`;
          const response = await get(tenant, url, acceptEncoding);
          assert.equal(response.statusCode, 200, name);
          assert.equal(response.headers['content-encoding'], encoding, name);
          assert.equal(response.headers['content-type'], 'application/json; charset=utf-8', name);
          assertVaries(response, name);
          assert.ok(decoded(response).equals(plain.rawPayload), name);
          if (encoding) assert.ok(response.rawPayload.length < plain.rawPayload.length / 3, name);
        }
      }
      const page = JSON.parse(decoded(await get(tenant, '/v1/customers?limit=1000', 'gzip')).toString());
      assert.equal(page.data.length, 300);
    });

    test('small answers and error bodies stay plain; large error bodies keep their shape', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const { app } = tenant.transport;
      const small: Array<[string, LightMyRequestResponse, number]> = [
        ['/health', await app.inject({ url: '/health', headers: { 'accept-encoding': 'br' } }), 200],
        ['401', await app.inject({ url: '/v1/customers', headers: { 'accept-encoding': 'br, gzip' } }), 401],
        ['404', await app.inject({ url: '/nowhere', headers: { 'accept-encoding': 'gzip' } }), 404],
      ];
      for (const [name, response, status] of small) {
        assert.equal(response.statusCode, status, name);
        assert.equal(response.headers['content-encoding'], undefined, name);
        assert.equal(response.json().statusCode ?? 200, status, name);
      }

      // 200 invalid items: a 400 of 200 errors, several kB, in the spec's shape once decoded.
      const invalid = Array.from({ length: 200 }, (_, n) => ({ code: `C${n}` }));
      const request = (acceptEncoding?: string) =>
        app.inject({
          method: 'POST',
          url: CUSTOMERS,
          headers: {
            ...tenant.headers,
            'content-type': 'application/json',
            ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}),
          },
          payload: JSON.stringify(invalid),
        });
      const plain = await request();
      const compressed = await request('gzip');
      assert.equal(plain.statusCode, 400);
      assert.equal(compressed.statusCode, 400);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(compressed.headers['content-encoding'], 'gzip');
      assert.ok(decoded(compressed).equals(plain.rawPayload));
      const body = JSON.parse(decoded(compressed).toString());
      assert.deepEqual(Object.keys(body), ['statusCode', 'errors']);
      assert.equal(body.statusCode, 400);
      assert.ok(body.errors.length > 0);
    });

    test('/openapi.json and /docs are served with and without compression', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const { app } = tenant.transport;
      for (const url of ['/openapi.json', '/docs', '/docs/static/swagger-ui-bundle.js']) {
        const plain = await app.inject({ url });
        assert.equal(plain.statusCode, 200, url);
        assert.equal(plain.headers['content-encoding'], undefined, url);
        const compressed = await app.inject({ url, headers: { 'accept-encoding': 'gzip, br' } });
        assert.equal(compressed.statusCode, 200, url);
        assert.ok(decoded(compressed).equals(plain.rawPayload), url);
      }
      const document = await app.inject({
        url: '/openapi.json',
        headers: { 'accept-encoding': 'br' },
      });
      assert.equal(document.headers['content-encoding'], 'br');
      assert.ok(JSON.parse(decoded(document).toString()).paths);
    });

    test('a gzip request body is not inflated: it is read as the JSON it is not', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const { app } = tenant.transport;
      const response = await app.inject({
        method: 'POST',
        url: CUSTOMERS,
        headers: { ...tenant.headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: gzipSync(JSON.stringify([customer('GZ')])),
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        statusCode: 400,
        errors: [{ message: 'Invalid JSON in request body' }],
      });
      assert.equal((await tenant.get('/v1/customers')).body.meta.totalItems, 0);
    });
  });
}
