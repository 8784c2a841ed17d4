import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { decodeJwt, decodeProtectedHeader, SignJWT, UnsecuredJWT } from 'jose';
import { buildApp } from '../../src/app.js';
import { TOKEN_AUDIENCE, TOKEN_ISSUER } from '../../src/auth/access-token.js';
import { addSubscriptionKey } from '../../src/auth/credentials.js';
import { tokenSigningKey } from '../../src/auth/server-secrets.js';
import { generateSubscriptionKey } from '../../src/auth/subscription-key.js';
import type { Database } from '../../src/db/database.js';
import { revokeClient, revokeSubscriptionKey } from '../../src/sql/credentials.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

const FORM = 'application/x-www-form-urlencoded';
const PRODUCTS = '/api/products/batch-create';

async function newApp(
  db: Database,
  config: typeof testAuthConfig | { tokenSecret: string; tokenTtlSeconds: number } = testAuthConfig,
) {
  const app = await buildApp({ db, config, logLevel: 'silent' });
  after(() => app.close());
  return app;
}

const newTenant = (db: Database) => createTenant(db, `auth-${crypto.randomUUID()}`);

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

function requestToken(
  app: FastifyInstance,
  tenant: Pick<NewTenant, 'clientId' | 'clientSecret'>,
  headers: Record<string, string> = {},
  remoteAddress = '127.0.0.1',
) {
  return app.inject({
    method: 'POST',
    url: '/token',
    remoteAddress,
    headers: { 'content-type': FORM, ...headers },
    payload: form({
      grant_type: 'client_credentials',
      client_id: tenant.clientId,
      client_secret: tenant.clientSecret,
    }),
  });
}

async function tokenOf(app: FastifyInstance, tenant: NewTenant): Promise<string> {
  const response = await requestToken(app, tenant);
  assert.equal(response.statusCode, 200, response.body);
  return response.json().access_token;
}

function postProducts(
  app: FastifyInstance,
  headers: Record<string, string>,
  payload = '[{"code":"P1","description":"one"}]',
) {
  return app.inject({
    method: 'POST',
    url: PRODUCTS,
    headers: { 'content-type': 'application/json', ...headers },
    payload,
  });
}

const credentials = (key: string, token: string) => ({
  'subscription-key': key,
  authorization: `Bearer ${token}`,
});

/** A token signed by the test itself: the server's own claims unless overridden. */
async function forge(
  db: Database,
  tenant: NewTenant,
  options: {
    alg?: string;
    key?: Uint8Array;
    iss?: string;
    aud?: string;
    iat?: number;
    exp?: number;
    typ?: string;
  } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tid: tenant.tenantId })
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: options.typ ?? 'at+jwt' })
    .setIssuer(options.iss ?? TOKEN_ISSUER)
    .setAudience(options.aud ?? TOKEN_AUDIENCE)
    .setSubject(tenant.clientId)
    .setIssuedAt(options.iat ?? now - 60)
    .setExpirationTime(options.exp ?? now + 600)
    .sign(options.key ?? (await tokenSigningKey(db, testAuthConfig)));
}

const BARE = 'Bearer realm="sfa-backoffice"';
const invalidToken = (description: string) =>
  `Bearer realm="sfa-backoffice", error="invalid_token", error_description="${description}"`;

for (const backend of backends()) {
  describe(`auth on ${backend.name}`, () => {
    test('token by form, JSON and HTTP Basic; each opens the batch endpoints', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const fields = {
        grant_type: 'client_credentials',
        client_id: tenant.clientId,
        client_secret: tenant.clientSecret,
      };
      const basic = Buffer.from(`${tenant.clientId}:${tenant.clientSecret}`).toString('base64');
      const answers = [
        await app.inject({
          method: 'POST',
          url: '/token',
          headers: { 'content-type': `${FORM}; charset=utf-8` },
          payload: form(fields),
        }),
        await app.inject({
          method: 'POST',
          url: '/token',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(fields),
        }),
        await app.inject({
          method: 'POST',
          url: '/token',
          headers: { 'content-type': FORM, authorization: `Basic ${basic}` },
          payload: 'grant_type=client_credentials',
        }),
      ];
      for (const [n, response] of answers.entries()) {
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.headers['cache-control'], 'no-store');
        assert.equal(response.headers.pragma, 'no-cache');
        const body = response.json();
        assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type']);
        assert.equal(body.token_type, 'Bearer');
        assert.equal(body.expires_in, 3600);
        assert.deepEqual(decodeProtectedHeader(body.access_token), { alg: 'HS256', typ: 'at+jwt' });
        const claims = decodeJwt(body.access_token);
        assert.equal(claims.iss, 'sfa-backoffice');
        assert.equal(claims.aud, 'sfa-backoffice-api');
        assert.equal(claims.sub, tenant.clientId);
        assert.equal(claims.tid, tenant.tenantId);
        assert.equal(claims.exp! - claims.iat!, 3600);

        const batch = await postProducts(
          app,
          credentials(tenant.subscriptionKey, body.access_token),
          JSON.stringify([{ code: `P${n}`, description: 'product' }]),
        );
        assert.equal(batch.statusCode, 201, batch.body);
      }
      const rows = await db.query('SELECT code FROM products WHERE tenant_id = $1 ORDER BY code', [
        tenant.tenantId,
      ]);
      assert.deepEqual(rows, [{ code: 'P0' }, { code: 'P1' }, { code: 'P2' }]);
    });

    test('credentials are stored hashed; the signing secret is generated once and kept', async () => {
      const db = await backend.db();
      const tenant = await newTenant(db);
      const [key] = await db.query<{ key_hash: string }>(
        'SELECT key_hash FROM subscription_keys WHERE key_id = $1',
        [tenant.keyId],
      );
      const [client] = await db.query<{ secret_hash: string }>(
        'SELECT secret_hash FROM api_clients WHERE client_id = $1',
        [tenant.clientId],
      );
      assert.ok(!key!.key_hash.includes(tenant.subscriptionKey.split('.')[1]!));
      assert.match(client!.secret_hash, /^scrypt\$16384\$8\$1\$/);
      assert.ok(!client!.secret_hash.includes(tenant.clientSecret));
      const first = await tokenSigningKey(db, testAuthConfig);
      assert.ok(first.length >= 32);
      assert.deepEqual(await tokenSigningKey(db, testAuthConfig), first);
    });

    test('the guard answers 401 before reading the body, with a bare Bearer challenge when no token came', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const token = await tokenOf(app, tenant);
      const cases: Array<[string, Record<string, string>, string]> = [
        ['no credentials', {}, 'Missing Subscription-Key header'],
        ['no key', { authorization: `Bearer ${token}` }, 'Missing Subscription-Key header'],
        [
          'no token',
          { 'subscription-key': tenant.subscriptionKey },
          'Missing access token: send Authorization: Bearer <access_token> from POST /token',
        ],
        [
          'Basic instead of Bearer',
          { 'subscription-key': tenant.subscriptionKey, authorization: 'Basic dXNlcjpwYXNz' },
          'Missing access token: send Authorization: Bearer <access_token> from POST /token',
        ],
        ['malformed key', credentials('not-a-key', token), 'Invalid or revoked subscription key'],
        [
          'unknown key',
          credentials(generateSubscriptionKey().subscriptionKey, token),
          'Invalid or revoked subscription key',
        ],
        [
          'known key id, wrong secret',
          credentials(`${tenant.keyId}.${'A'.repeat(43)}`, token),
          'Invalid or revoked subscription key',
        ],
      ];
      for (const [name, headers, message] of cases) {
        // Invalid JSON: a 400 would mean the body was read before the credentials were checked.
        const response = await postProducts(app, headers, '[{');
        assert.equal(response.statusCode, 401, name);
        assert.deepEqual(response.json(), { statusCode: 401, errors: [{ message }] }, name);
        assert.equal(response.headers['www-authenticate'], BARE, name);
      }
      assert.deepEqual(
        await db.query('SELECT code FROM products WHERE tenant_id = $1', [tenant.tenantId]),
        [],
      );
    });

    test('a refused token gets 401 with error="invalid_token"', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const now = Math.floor(Date.now() / 1000);
      const otherKey = new TextEncoder().encode('another secret that is long enough for HS256!');
      const unsigned = new UnsecuredJWT({ tid: tenant.tenantId })
        .setIssuer(TOKEN_ISSUER)
        .setAudience(TOKEN_AUDIENCE)
        .setSubject(tenant.clientId)
        .setIssuedAt()
        .setExpirationTime('10m')
        .encode();
      const cases: Array<[string, string, string]> = [
        ['garbage', 'abc.def.ghi', 'The access token is invalid'],
        ['not a b64token', 'a b"c', 'The access token is invalid'],
        ['expired', await forge(db, tenant, { exp: now - 5 }), 'The access token expired'],
        ['HS512', await forge(db, tenant, { alg: 'HS512' }), 'The access token is invalid'],
        ['alg none', unsigned, 'The access token is invalid'],
        ['another key', await forge(db, tenant, { key: otherKey }), 'The access token is invalid'],
        ['wrong audience', await forge(db, tenant, { aud: 'someone-else' }), 'The access token is invalid'],
        ['wrong issuer', await forge(db, tenant, { iss: 'someone-else' }), 'The access token is invalid'],
        ['wrong type', await forge(db, tenant, { typ: 'JWT' }), 'The access token is invalid'],
      ];
      for (const [name, token, message] of cases) {
        const response = await postProducts(app, credentials(tenant.subscriptionKey, token));
        assert.equal(response.statusCode, 401, name);
        assert.deepEqual(response.json(), { statusCode: 401, errors: [{ message }] }, name);
        assert.equal(response.headers['www-authenticate'], invalidToken(message), name);
      }
      // The same forge with the right claims passes: the cases above fail for their one difference.
      const good = await postProducts(app, credentials(tenant.subscriptionKey, await forge(db, tenant)));
      assert.equal(good.statusCode, 201, good.body);
    });

    test('a token dated ahead or living longer than TOKEN_TTL_SECONDS is refused', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const now = Math.floor(Date.now() / 1000);
      const year = 365 * 86_400;
      const refused: Array<[string, string]> = [
        ['iat 10 years ahead', await forge(db, tenant, { iat: now + 10 * year, exp: now + 10 * year + 600 })],
        ['exp 100 years ahead', await forge(db, tenant, { exp: now + 100 * year })],
        ['iat 2 minutes ahead', await forge(db, tenant, { iat: now + 120, exp: now + 600 })],
        ['a second longer than the TTL', await forge(db, tenant, { iat: now - 60, exp: now - 60 + 3601 })],
      ];
      for (const [name, token] of refused) {
        const response = await postProducts(app, credentials(tenant.subscriptionKey, token));
        assert.equal(response.statusCode, 401, name);
        assert.equal(response.headers['www-authenticate'], invalidToken('The access token is invalid'), name);
      }
      // Within the bounds: iat a little ahead (another instance's clock), a lifetime of exactly the TTL.
      for (const token of [
        await forge(db, tenant, { iat: now + 30, exp: now + 600 }),
        await forge(db, tenant, { iat: now - 60, exp: now - 60 + 3600 }),
      ]) {
        const response = await postProducts(app, credentials(tenant.subscriptionKey, token));
        assert.equal(response.statusCode, 201, response.body);
      }
    });

    test('a token is accepted in its canonical spelling only', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const token = await tokenOf(app, tenant);
      // The signature (32 bytes) ends in a character with 2 unused bits: 3 other characters decode to
      // the same bytes; a trailing `=` is ignored by decoders too.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(token.at(-1)!);
      assert.equal(last % 4, 0, 'the canonical last character');
      const spellings = [1, 2, 3].map((bits) => token.slice(0, -1) + alphabet[last + bits]);
      spellings.push(`${token}=`);
      for (const spelling of spellings) {
        assert.deepEqual(
          Buffer.from(spelling.split('.')[2]!, 'base64url'),
          Buffer.from(token.split('.')[2]!, 'base64url'),
          'the same signature bytes',
        );
        const response = await postProducts(app, credentials(tenant.subscriptionKey, spelling));
        assert.equal(response.statusCode, 401, spelling.slice(-4));
        assert.equal(response.headers['www-authenticate'], invalidToken('The access token is invalid'));
      }
      assert.equal((await postProducts(app, credentials(tenant.subscriptionKey, token))).statusCode, 201);
    });

    test('revoked key, revoked client, and credentials of two tenants are refused', async () => {
      const db = await backend.db();
      const a = await newTenant(db);
      const b = await newTenant(db);
      const spare = await addSubscriptionKey(db, a.tenantId);
      assert.equal(await revokeSubscriptionKey(db, a.tenantId, spare.keyId), 'revoked');
      assert.equal(await revokeSubscriptionKey(db, a.tenantId, spare.keyId), 'already-revoked');
      assert.equal(await revokeSubscriptionKey(db, b.tenantId, a.keyId), 'not-found');
      const app = await newApp(db);
      const tokenA = await tokenOf(app, a);
      const tokenB = await tokenOf(app, b);

      const revokedKey = await postProducts(app, credentials(spare.subscriptionKey, tokenA));
      assert.equal(revokedKey.statusCode, 401);
      assert.deepEqual(revokedKey.json().errors, [{ message: 'Invalid or revoked subscription key' }]);

      const crossed = await postProducts(app, credentials(a.subscriptionKey, tokenB));
      assert.equal(crossed.statusCode, 401);
      assert.deepEqual(crossed.json().errors, [
        { message: 'The subscription key and the access token belong to different tenants' },
      ]);
      assert.equal(crossed.headers['www-authenticate'], BARE);

      // A client revoked before this app looked it up (it caches what it read for 30 s): its token is
      // refused, and it gets no new token.
      const c = await newTenant(db);
      const tokenC = await tokenOf(app, c);
      assert.equal(await revokeClient(db, c.tenantId, c.clientId), 'revoked');
      const revokedClient = await postProducts(app, credentials(c.subscriptionKey, tokenC));
      assert.equal(revokedClient.statusCode, 401);
      assert.equal(revokedClient.headers['www-authenticate'], invalidToken('The access token was revoked'));
      const noToken = await requestToken(app, c);
      assert.equal(noToken.statusCode, 400);
      assert.equal(noToken.json().error, 'invalid_client');

      assert.equal((await postProducts(app, credentials(a.subscriptionKey, tokenA))).statusCode, 201);
    });

    test('/token errors follow RFC 6749 5.2', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const other = await newTenant(db);
      const post = (payload: string, headers: Record<string, string> = { 'content-type': FORM }) =>
        app.inject({ method: 'POST', url: '/token', headers, payload });
      const good = {
        grant_type: 'client_credentials',
        client_id: tenant.clientId,
        client_secret: tenant.clientSecret,
      };
      const basic = (id: string, secret: string) =>
        `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
      const cases: Array<[string, Awaited<ReturnType<typeof post>>, number, string, string | undefined]> = [
        [
          'no grant_type',
          await post(form({ client_id: tenant.clientId, client_secret: 'x' })),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'password grant',
          await post(form({ ...good, grant_type: 'password' })),
          400,
          'unsupported_grant_type',
          undefined,
        ],
        [
          'no client',
          await post(form({ grant_type: 'client_credentials' })),
          400,
          'invalid_client',
          undefined,
        ],
        [
          'wrong secret',
          await post(form({ ...good, client_secret: 'wrong' })),
          400,
          'invalid_client',
          undefined,
        ],
        [
          'unknown client',
          await post(form({ ...good, client_id: 'cl_0000000000000000' })),
          400,
          'invalid_client',
          undefined,
        ],
        [
          'wrong secret by Basic',
          await post('grant_type=client_credentials', {
            'content-type': FORM,
            authorization: basic(tenant.clientId, 'nope'),
          }),
          401,
          'invalid_client',
          'Basic realm="sfa-backoffice"',
        ],
        [
          'malformed Basic',
          await post('grant_type=client_credentials', { 'content-type': FORM, authorization: 'Basic !!!' }),
          401,
          'invalid_client',
          'Basic realm="sfa-backoffice"',
        ],
        [
          'two authentication methods',
          await post(form(good), {
            'content-type': FORM,
            authorization: basic(tenant.clientId, tenant.clientSecret),
          }),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'repeated parameter',
          await post(`${form(good)}&grant_type=client_credentials`),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'text/plain',
          await post(form(good), { 'content-type': 'text/plain' }),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'invalid JSON',
          await post('{"grant_type":', { 'content-type': 'application/json' }),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'JSON number',
          await post(JSON.stringify({ ...good, client_secret: 12 }), { 'content-type': 'application/json' }),
          400,
          'invalid_request',
          undefined,
        ],
        [
          'unknown subscription key',
          await post(form(good), {
            'content-type': FORM,
            'subscription-key': generateSubscriptionKey().subscriptionKey,
          }),
          400,
          'invalid_client',
          undefined,
        ],
        [
          "another tenant's subscription key",
          await post(form(good), { 'content-type': FORM, 'subscription-key': other.subscriptionKey }),
          400,
          'invalid_client',
          undefined,
        ],
      ];
      for (const [name, response, status, error, challenge] of cases) {
        assert.equal(response.statusCode, status, `${name}: ${response.body}`);
        const body = response.json();
        assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], name);
        assert.equal(body.error, error, name);
        assert.equal(response.headers['www-authenticate'], challenge, name);
        assert.equal(response.headers['cache-control'], 'no-store', name);
      }
      const withKey = await post(form(good), {
        'content-type': FORM,
        'subscription-key': tenant.subscriptionKey,
      });
      assert.equal(withKey.statusCode, 200);
    });

    test('repeated failures from one address, or for one client id there, are refused with 429', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const bystander = await newTenant(db);
      for (let n = 0; n < 5; n++) {
        const response = await requestToken(app, { clientId: tenant.clientId, clientSecret: 'wrong' });
        assert.equal(response.statusCode, 400);
      }
      // Refused at that address even with the right secret, without spending a scrypt on it.
      const throttled = await requestToken(app, tenant);
      assert.equal(throttled.statusCode, 429);
      assert.equal(throttled.json().error, 'slow_down');
      const retryAfter = Number(throttled.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
      assert.equal(throttled.headers['cache-control'], 'no-store');
      // Another client from the same address is still served: 5 failures are under the address limit.
      assert.equal((await requestToken(app, bystander)).statusCode, 200);
      // 20 failures from one address, each for a different client id, close the address.
      for (let n = 5; n < 20; n++) {
        const response = await requestToken(app, {
          clientId: `cl_${String(n).padStart(16, '0')}`,
          clientSecret: 'wrong',
        });
        assert.equal(response.statusCode, 400);
      }
      assert.equal((await requestToken(app, bystander)).statusCode, 429);
      // Another address is not concerned.
      assert.equal((await requestToken(app, bystander, {}, '192.0.2.9')).statusCode, 200);
    });

    test('wrong secrets for a client id from many addresses do not lock the client out', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const wrong = { clientId: tenant.clientId, clientSecret: 'wrong' };
      // An attacker who knows the client id, from 3 addresses, 5 wrong secrets each: 15 a minute.
      const answers: number[] = [];
      for (let n = 0; n < 15; n++) {
        answers.push((await requestToken(app, wrong, {}, `203.0.113.${n % 3}`)).statusCode);
      }
      // The first 5 are plain refusals; past the client's limit a wrong secret is told to slow down.
      assert.deepEqual(answers, [...Array(5).fill(400), ...Array(10).fill(429)]);
      const slowDown = await requestToken(app, wrong, {}, '203.0.113.77');
      assert.equal(slowDown.statusCode, 429);
      assert.ok(Number(slowDown.headers['retry-after']) >= 1);
      // The real client, from its own address (and from a new one), still gets its token at once.
      assert.equal((await requestToken(app, tenant, {}, '198.51.100.1')).statusCode, 200, 'its own address');
      assert.equal((await requestToken(app, tenant, {}, '198.51.100.2')).statusCode, 200, 'a new address');
      // An attacking address is closed for that client, even with the right secret.
      assert.equal((await requestToken(app, tenant, {}, '203.0.113.0')).statusCode, 429);
    });

    test('the addresses of one IPv6 /64 count as one caller; another /64 is not concerned', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const bystander = await newTenant(db);
      // 20 failures, each from another address of one /64 (a host may hold all 2^64 of them).
      for (let n = 0; n < 20; n++) {
        const wrong = { clientId: `cl_${String(n).padStart(16, '0')}`, clientSecret: 'wrong' };
        assert.equal(
          (await requestToken(app, wrong, {}, `2001:db8:7:7::${(n + 1).toString(16)}`)).statusCode,
          400,
        );
      }
      assert.equal((await requestToken(app, bystander, {}, '2001:db8:7:7::ffff')).statusCode, 429);
      assert.equal((await requestToken(app, bystander, {}, '2001:db8:7:8::1')).statusCode, 200);
    });

    test('TOKEN_SECRET signs when set; tokens of another secret are refused', async () => {
      const db = await backend.db();
      const tenant = await newTenant(db);
      const configured = await newApp(db, { tokenSecret: 'x'.repeat(40), tokenTtlSeconds: 120 });
      const generated = await newApp(db);
      const response = await requestToken(configured, tenant);
      assert.equal(response.json().expires_in, 120);
      const token = response.json().access_token;
      assert.equal(
        (await postProducts(configured, credentials(tenant.subscriptionKey, token))).statusCode,
        201,
      );
      const elsewhere = await postProducts(generated, credentials(tenant.subscriptionKey, token));
      assert.equal(elsewhere.statusCode, 401);
      assert.equal(elsewhere.headers['www-authenticate'], invalidToken('The access token is invalid'));
    });

    test('batch endpoints still refuse a form body with 415', async () => {
      const db = await backend.db();
      const app = await newApp(db);
      const tenant = await newTenant(db);
      const token = await tokenOf(app, tenant);
      const response = await app.inject({
        method: 'POST',
        url: PRODUCTS,
        headers: { 'content-type': FORM, ...credentials(tenant.subscriptionKey, token) },
        payload: 'code=P1&description=x',
      });
      assert.equal(response.statusCode, 415);
      assert.deepEqual(response.json(), {
        statusCode: 415,
        errors: [{ message: 'Content-Type must be application/json' }],
      });
    });
  });
}
