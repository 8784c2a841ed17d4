import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { jwtVerify, SignJWT } from 'jose';
import { accessToken } from '../../kit/token.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import {
  InvalidAccessToken,
  isUnexpired,
  signAccessToken,
  TOKEN_ISSUER,
  verifyAccessToken,
} from '../../src/auth/access-token.js';
import { ApiClientVerifier } from '../../src/auth/client-verifier.js';
import { SubscriptionKeyVerifier } from '../../src/auth/key-verifier.js';
import { once, serverSecret, tokenSigningKey } from '../../src/auth/server-secrets.js';
import { AccessTokenCache, type AccessTokenCacheOptions } from '../../src/auth/token-cache.js';
import type { Database } from '../../src/db/database.js';
import { installErrorHandling } from '../../src/http/error-handler.js';
import { createGuard } from '../../src/http/guard-hook.js';
import { revokeClient } from '../../src/sql/credentials.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

const SUBJECT = { clientId: 'cl_0000000000000001', tenantId: 7 };

/** A cache whose verifications are counted, on a clock the test moves (milliseconds). */
function countingCache(options: AccessTokenCacheOptions = {}) {
  const counted = { verifications: 0, nowMs: Date.now() };
  const cache = new AccessTokenCache({
    verify: (key, token) => {
      counted.verifications++;
      return verifyAccessToken(key, token);
    },
    now: () => counted.nowMs,
    ...options,
  });
  return { cache, counted };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => assert.fail('the token was accepted'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof InvalidAccessToken, String(error));
  return error.message;
}

describe('AccessTokenCache', () => {
  test('a valid token is verified once, then served from the cache', async () => {
    const key = randomBytes(32);
    const token = await signAccessToken(key, SUBJECT, 600);
    const { cache, counted } = countingCache();
    for (let n = 0; n < 5; n++) assert.deepEqual(await cache.verify(key, token), SUBJECT);
    assert.equal(counted.verifications, 1);
    // Equal bytes in another object are the same key.
    assert.deepEqual(await cache.verify(Buffer.from(key), token), SUBJECT);
    assert.equal(counted.verifications, 1);
  });

  test('a cached token is refused from the second its exp claim reaches, as jose refuses it', async () => {
    const key = randomBytes(32);
    const token = await signAccessToken(key, SUBJECT, 600);
    const { expiresAt } = await verifyAccessToken(key, token);
    const { cache, counted } = countingCache();
    await cache.verify(key, token);
    counted.nowMs = expiresAt * 1000 - 1;
    assert.deepEqual(await cache.verify(key, token), SUBJECT);
    counted.nowMs = expiresAt * 1000;
    assert.equal(await refusal(cache.verify(key, token)), 'The access token expired');
    assert.equal(counted.verifications, 1, 'refused by the cache, without asking jose');
    assert.equal(cache.size, 0, 'and forgotten');

    // The rule is jose's: compared with jwtVerify at the same instants around exp.
    for (const nowMs of [
      expiresAt * 1000 - 1001,
      expiresAt * 1000 - 1,
      expiresAt * 1000,
      expiresAt * 1000 + 1,
    ]) {
      const jose = await jwtVerify(token, key, { currentDate: new Date(nowMs) }).then(
        () => true,
        () => false,
      );
      assert.equal(isUnexpired(expiresAt, nowMs), jose, String(nowMs));
    }
  });

  test('another key: the entries verified under the old one are not served', async () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const token = await signAccessToken(oldKey, SUBJECT, 600);
    const { cache, counted } = countingCache();
    await cache.verify(oldKey, token);
    assert.equal(await refusal(cache.verify(newKey, token)), 'The access token is invalid');
    assert.equal(counted.verifications, 2);
    assert.equal(cache.size, 0);

    // The same key object with its bytes changed in place is another key too.
    const key = Buffer.from(oldKey);
    await cache.verify(key, token);
    newKey.copy(key);
    assert.equal(await refusal(cache.verify(key, token)), 'The access token is invalid');
    assert.equal(counted.verifications, 4);
  });

  test('invalid tokens are never cached', async () => {
    const key = randomBytes(32);
    const now = Math.floor(Date.now() / 1000);
    const junk = [
      'abc.def.ghi',
      await signAccessToken(randomBytes(32), SUBJECT, 600),
      await signAccessToken(key, SUBJECT, -5),
      await new SignJWT({ tid: 7 })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
        .setIssuer(TOKEN_ISSUER)
        .setAudience('someone-else')
        .setSubject(SUBJECT.clientId)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(key),
    ];
    const { cache, counted } = countingCache();
    for (const token of junk) {
      await refusal(cache.verify(key, token));
      await refusal(cache.verify(key, token));
    }
    assert.equal(counted.verifications, junk.length * 2);
    assert.equal(cache.size, 0);
  });

  test('bounded: past maxEntries the least recently used token is dropped', async () => {
    const key = randomBytes(32);
    const tokens = await Promise.all(
      Array.from({ length: 5 }, (_, n) => signAccessToken(key, { ...SUBJECT, tenantId: n + 1 }, 600)),
    );
    const { cache, counted } = countingCache({ maxEntries: 3 });
    for (const token of tokens) await cache.verify(key, token);
    assert.equal(cache.size, 3);
    assert.equal(counted.verifications, 5);
    assert.deepEqual(await cache.verify(key, tokens[4]!), { ...SUBJECT, tenantId: 5 });
    assert.deepEqual(await cache.verify(key, tokens[2]!), { ...SUBJECT, tenantId: 3 });
    assert.equal(counted.verifications, 5, 'the newest three are still cached');
    // Tenants 3, 4 and 5 are cached, 5 and then 3 just used: tenant 1 comes in, 4 goes.
    assert.deepEqual(await cache.verify(key, tokens[0]!), { ...SUBJECT, tenantId: 1 });
    assert.equal(counted.verifications, 6, 'a dropped token is verified again');
    assert.equal(cache.size, 3);
    await cache.verify(key, tokens[4]!);
    await cache.verify(key, tokens[2]!);
    assert.equal(counted.verifications, 6, 'the two used most recently were kept');
    await cache.verify(key, tokens[3]!);
    assert.equal(counted.verifications, 7, 'tenant 4, the least recently used, was dropped');
  });
});

const CREDENTIAL_CACHE_MS = 30_000;

const postProducts = (app: FastifyInstance, key: string, token: string, code: string) =>
  app.inject({
    method: 'POST',
    url: '/api/products/batch-create',
    headers: {
      'content-type': 'application/json',
      'subscription-key': key,
      authorization: `Bearer ${token}`,
    },
    payload: JSON.stringify([{ code, description: 'product' }]),
  });

/** The guard alone, wired as createAuth wires it but with a counting token cache. */
async function guardedApp(db: Database) {
  const { cache, counted } = countingCache({ now: () => Date.now() });
  const app = Fastify();
  after(() => app.close());
  app.decorateRequest('tenantId', 0);
  installErrorHandling(app);
  const guard = createGuard({
    keys: new SubscriptionKeyVerifier(
      db,
      once(() => serverSecret(db, 'key_hashing')),
      CREDENTIAL_CACHE_MS,
    ),
    clients: new ApiClientVerifier(db, CREDENTIAL_CACHE_MS),
    signingKey: once(() => tokenSigningKey(db, testAuthConfig)),
    tokens: cache,
  });
  app.get('/guarded', { onRequest: guard }, async (request) => ({ tenantId: request.tenantId }));
  return { app, counted };
}

for (const backend of backends()) {
  describe(`verified tokens in the guard on ${backend.name}`, () => {
    test('a token is verified by jose once; a revoked client is still refused once its 30 s are over', async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const db = await backend.db();
      const tenant = await createTenant(db, `token-cache-${crypto.randomUUID()}`);
      const { app, counted } = await guardedApp(db);
      const token = await signAccessToken(
        await tokenSigningKey(db, testAuthConfig),
        { clientId: tenant.clientId, tenantId: tenant.tenantId },
        3600,
      );
      const get = () =>
        app.inject({
          url: '/guarded',
          headers: { 'subscription-key': tenant.subscriptionKey, authorization: `Bearer ${token}` },
        });
      for (let n = 0; n < 3; n++) assert.deepEqual((await get()).json(), { tenantId: tenant.tenantId });
      assert.equal(counted.verifications, 1);

      assert.equal(await revokeClient(db, tenant.tenantId, tenant.clientId), 'revoked');
      // The existing rule: what the guard read about the client is trusted for 30 s.
      assert.equal((await get()).statusCode, 200);
      t.mock.timers.tick(CREDENTIAL_CACHE_MS + 1);
      const refused = await get();
      assert.equal(refused.statusCode, 401);
      assert.deepEqual(refused.json().errors, [{ message: 'The access token was revoked' }]);
      assert.equal(counted.verifications, 1, 'the token itself was still served from the cache');
    });

    test('through the app: a revoked client whose token is cached is refused once its 30 s are over', async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const db = await backend.db();
      const tenant = await createTenant(db, `token-cache-${crypto.randomUUID()}`);
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => app.close());
      const token = await accessToken(injectTransport(app), tenant);
      assert.equal((await postProducts(app, tenant.subscriptionKey, token, 'P1')).statusCode, 201);
      assert.equal(await revokeClient(db, tenant.tenantId, tenant.clientId), 'revoked');
      assert.equal((await postProducts(app, tenant.subscriptionKey, token, 'P2')).statusCode, 201);
      t.mock.timers.tick(CREDENTIAL_CACHE_MS + 1);
      const refused = await postProducts(app, tenant.subscriptionKey, token, 'P3');
      assert.equal(refused.statusCode, 401);
      assert.deepEqual(refused.json(), {
        statusCode: 401,
        errors: [{ message: 'The access token was revoked' }],
      });
      const codes = await db.query('SELECT code FROM products WHERE tenant_id = $1 ORDER BY code', [
        tenant.tenantId,
      ]);
      assert.deepEqual(codes, [{ code: 'P1' }, { code: 'P2' }]);
    });
  });
}
