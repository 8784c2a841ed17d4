import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

/*
 * Text that is not well-formed Unicode. Bytes that are not UTF-8 and strings with a
 * lone surrogate (a \ud800 escape without its pair) are refused as invalid JSON, on every endpoint
 * with a JSON body: they used to become U+FFFD on the way to the database, so two different codes
 * collided (a 500 on SQLSTATE 21000, or a silent update of another row), and a stock could name a
 * product that was never created. A declared charset other than UTF-8 is refused with 415.
 */

const PRODUCTS = '/api/products/batch-create';
const STOCKS = '/api/stocks/batch-create';
const ACKNOWLEDGE = '/v1/deliveries/acknowledge';
const INVALID_JSON = { statusCode: 400, errors: [{ message: 'Invalid JSON in request body' }] };
const BAD_CHARSET = { statusCode: 415, errors: [{ message: 'Content-Type charset must be utf-8' }] };

for (const backend of backends()) {
  describe(`text that is not well-formed Unicode on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
    });
    after(() => tenant?.transport.app.close());

    const postBytes = async (path: string, payload: Buffer | string, type = 'application/json') => {
      const response = await tenant.transport.app.inject({
        method: 'POST',
        url: path,
        headers: { ...tenant.headers, 'content-type': type },
        payload,
      });
      return { status: response.statusCode, body: JSON.parse(response.body) };
    };

    test('lone surrogates, escaped, anywhere in the body: 400 invalid JSON, nothing written', async () => {
      const bodies = [
        '[{"code":"SUR\\ud800","description":"a"},{"code":"SUR\\udc00","description":"b"}]',
        '[{"code":"LONE\\ud800","description":"a"}]',
        '[{"code":"LONE\\udfff","description":"a"}]',
        '[{"code":"OK","description":"high at the end \\udbff"}]',
        '[{"code":"OK","description":"reversed \\udc00\\ud800"}]',
        '[{"code":"OK","description":"d","\\ud800":1}]',
        // A literal backslash, then a lone escape: the pair is only apparent.
        '[{"code":"OK","description":"\\\\ud800\\udc00"}]',
        '[{"code":"OK","description":"d","unit":["\\ud800"]}]',
      ];
      for (const body of bodies) {
        assert.deepEqual(await postBytes(PRODUCTS, body), { status: 400, body: INVALID_JSON }, body);
      }
      assert.deepEqual(await postBytes(STOCKS, '[{"product_code":"LONE\\udfff","location":"L"}]'), {
        status: 400,
        body: INVALID_JSON,
      });
      assert.deepEqual(await postBytes(ACKNOWLEDGE, '["D\\ud800"]'), { status: 400, body: INVALID_JSON });
      const stored = await (await backend.db()).query<{ n: string }>(
        'SELECT count(*)::text AS n FROM products WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      assert.equal(stored[0]!.n, '0');
    });

    test('well-formed escapes are text like any other: pairs, and a backslash before "ud800"', async () => {
      const body =
        '[{"code":"PAIR\\ud83d\\ude00","description":"a"},' +
        '{"code":"LITERAL","description":"\\\\ud800 is six characters"},' +
        '{"code":"RAW😀","description":"b"}]';
      const answer = await postBytes(PRODUCTS, body);
      assert.deepEqual(answer.body, {
        statusCode: 201,
        message: 'Products created successfully',
        created: 3,
        updated: 0,
        ignored: 0,
      });
      const rows = await (await backend.db()).query<{ code: string; description: string }>(
        'SELECT code, description FROM products WHERE tenant_id = $1 ORDER BY code',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(
        rows.map((r) => [r.code, r.description]),
        [
          ['LITERAL', '\\ud800 is six characters'],
          ['PAIR😀', 'a'],
          ['RAW😀', 'b'],
        ],
      );
    });

    test('bytes that are not UTF-8: 400 invalid JSON', async () => {
      const wrap = (bytes: number[]) =>
        Buffer.concat([Buffer.from('[{"code":"B'), Buffer.from(bytes), Buffer.from('","description":"d"}]')]);
      for (const bytes of [
        [0xc0, 0xaf], // overlong "/"
        [0xff],
        [0xe9], // latin1 é
        [0xed, 0xa0, 0x80], // a surrogate encoded as UTF-8 (CESU-8)
        [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
        [0xe2, 0x82], // cut short
      ]) {
        assert.deepEqual(
          await postBytes(PRODUCTS, wrap(bytes)),
          { status: 400, body: INVALID_JSON },
          `${bytes}`,
        );
        assert.deepEqual(
          await postBytes(
            ACKNOWLEDGE,
            Buffer.concat([Buffer.from('["D'), Buffer.from(bytes), Buffer.from('"]')]),
          ),
          {
            status: 400,
            body: INVALID_JSON,
          },
        );
      }
    });

    test('a charset other than UTF-8: 415; UTF-8 in any spelling is accepted', async () => {
      const body = '[{"code":"CS","description":"d"}]';
      for (const type of [
        'application/json; charset=latin1',
        'application/json; charset=ISO-8859-1',
        'application/json; charset=utf-16',
        'application/json; charset="windows-1252"',
      ]) {
        assert.deepEqual(await postBytes(PRODUCTS, body, type), { status: 415, body: BAD_CHARSET }, type);
      }
      for (const type of [
        'application/json; charset=utf-8',
        'application/json; charset=UTF-8',
        'application/json;charset="utf-8"',
        'application/json; charset=utf8',
      ]) {
        assert.equal((await postBytes(PRODUCTS, body, type)).status, 201, type);
      }
    });

    test('read filters with a lone surrogate or bytes that are not UTF-8: a 400 naming the parameter', async () => {
      for (const url of [
        '/v1/customers?client_id=%ED%A0%80',
        '/v1/customers?client_id=%ED%BF%BF',
        '/v1/deliveries/pending?seller_id=%ED%A0%80x',
        '/v1/deliveries/pending?client_id=%C0%AF',
        '/v1/customers?client_id=%FF',
      ]) {
        const answer = await tenant.get(url);
        assert.ok(answer.status === 400 || answer.status === 200, `${url}: ${answer.status}`);
        assert.notEqual(answer.status, 500, url);
        if (answer.status === 400) {
          for (const e of answer.body.errors) assert.equal(typeof e.field, 'string', url);
        }
      }
    });
  });
}
