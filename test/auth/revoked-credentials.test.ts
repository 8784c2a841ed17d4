import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { accessToken, FORM, tokenForm } from '../../kit/token.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { addClient, addSubscriptionKey } from '../../src/auth/credentials.js';
import type { Database } from '../../src/db/database.js';
import { revokeClient, revokeSubscriptionKey } from '../../src/sql/credentials.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

/*
 * README: "a revoked key or client is refused by running servers within 30 seconds". Two running
 * servers (two apps on one database) that have read a subscription key, or an API client, before it
 * is revoked with the functions `key revoke` and `client revoke` call: each keeps accepting it only
 * while what it read is fresh (30 s from its own read), and refuses it with the guard's 401 from then
 * on, so every server refuses it at most 30 s after the revocation. A revoked client gets no new token
 * at once, on every server, even one that holds it as active. The clock is moved with node:test's mock
 * timers (Date only); nothing sleeps. test/auth/auth.test.ts covers credentials revoked before a server
 * read them, test/auth/token-cache.test.ts a token cached by one server past 30 s.
 */

/** How long a running server trusts what it read about a key or a client (README: 30 seconds). */
const CACHE_MS = 30_000;

const BARE_CHALLENGE = 'Bearer realm="sfa-backoffice"';

async function newServer(db: Database): Promise<FastifyInstance> {
  const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
  after(() => app.close());
  return app;
}

/** A guarded read with these credentials: status, JSON body and the challenge header. */
async function read(app: FastifyInstance, subscriptionKey: string, token: string) {
  const response = await app.inject({
    method: 'GET',
    url: '/v1/customers?limit=1',
    headers: { 'subscription-key': subscriptionKey, authorization: `Bearer ${token}` },
  });
  return {
    status: response.statusCode,
    body: response.json(),
    challenge: response.headers['www-authenticate'],
  };
}

async function assertAccepted(app: FastifyInstance, subscriptionKey: string, token: string, when: string) {
  const answer = await read(app, subscriptionKey, token);
  assert.equal(answer.status, 200, `${when}: ${JSON.stringify(answer.body)}`);
}

function requestToken(app: FastifyInstance, client: { clientId: string; clientSecret: string }) {
  return app.inject({
    method: 'POST',
    url: '/token',
    headers: { 'content-type': FORM },
    payload: tokenForm(client),
  });
}

for (const backend of backends()) {
  describe(`revoked credentials on running servers on ${backend.name}`, () => {
    test('a subscription key both servers read before its revocation is refused by each 30 s after its read', async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const db = await backend.db();
      const tenant = await createTenant(db, `revoked-key-${randomUUID()}`);
      // A second key of the tenant (`key add`), the one revoked: the tenant's first key stays good.
      const spare = await addSubscriptionKey(db, tenant.tenantId);
      const [a, b] = [await newServer(db), await newServer(db)];
      // Tokens are signed with the key kept in the database: one token is good on both servers.
      const token = await accessToken(injectTransport(a), tenant);

      // t = 0 s: server A reads the key; t = 10 s: server B does.
      await assertAccepted(a, spare.subscriptionKey, token, 'A, before the revocation');
      t.mock.timers.tick(10_000);
      await assertAccepted(b, spare.subscriptionKey, token, 'B, before the revocation');

      // t = 20 s: the key is revoked, as `key revoke` does it.
      t.mock.timers.tick(10_000);
      assert.equal(await revokeSubscriptionKey(db, tenant.tenantId, spare.keyId), 'revoked');
      // What each server read is still fresh: the key still works there.
      await assertAccepted(a, spare.subscriptionKey, token, 'A, 10 s after its read');
      await assertAccepted(b, spare.subscriptionKey, token, 'B, 0 s after its read');

      // t = 29.999 s: A's read is still fresh; t = 30 s: it is not, and A refuses the key.
      t.mock.timers.tick(CACHE_MS - 20_000 - 1);
      await assertAccepted(a, spare.subscriptionKey, token, 'A, 1 ms before its read is 30 s old');
      t.mock.timers.tick(1);
      const refusedByA = await read(a, spare.subscriptionKey, token);
      assert.equal(refusedByA.status, 401, 'A, 30 s after its read (10 s after the revocation)');
      assert.deepEqual(refusedByA.body, {
        statusCode: 401,
        errors: [{ message: 'Invalid or revoked subscription key' }],
      });
      assert.equal(refusedByA.challenge, BARE_CHALLENGE);
      // B read the key 10 s after A: it still trusts it, until its own 30 s are over.
      await assertAccepted(b, spare.subscriptionKey, token, 'B, 20 s after its read');

      // t = 39.999 s, then 40 s: 30 s after B's read, 20 s after the revocation.
      t.mock.timers.tick(10_000 - 1);
      await assertAccepted(b, spare.subscriptionKey, token, 'B, 1 ms before its read is 30 s old');
      t.mock.timers.tick(1);
      const refusedByB = await read(b, spare.subscriptionKey, token);
      assert.equal(refusedByB.status, 401, 'B, 30 s after its read');
      assert.deepEqual(refusedByB.body, refusedByA.body);
      assert.equal(refusedByB.challenge, BARE_CHALLENGE);

      // Refused from then on, however long; the tenant's other key, with the same token, still works.
      t.mock.timers.tick(5 * CACHE_MS);
      for (const server of [a, b]) {
        assert.equal((await read(server, spare.subscriptionKey, token)).status, 401);
        await assertAccepted(server, tenant.subscriptionKey, token, 'the key that was not revoked');
      }
    });

    test('an API client both servers read before its revocation: no new token at once, its token refused 30 s after each read', async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const db = await backend.db();
      const tenant = await createTenant(db, `revoked-client-${randomUUID()}`);
      const [a, b] = [await newServer(db), await newServer(db)];
      const token = await accessToken(injectTransport(a), tenant);

      // t = 0 s: server A reads the client's standing; t = 10 s: server B does.
      await assertAccepted(a, tenant.subscriptionKey, token, 'A, before the revocation');
      t.mock.timers.tick(10_000);
      await assertAccepted(b, tenant.subscriptionKey, token, 'B, before the revocation');

      // t = 20 s: the client is revoked, as `client revoke` does it.
      t.mock.timers.tick(10_000);
      assert.equal(await revokeClient(db, tenant.tenantId, tenant.clientId), 'revoked');

      // POST /token checks the stored client on every request: both servers refuse a new token at
      // once, although both hold the client as active for their guard.
      for (const [name, server] of [
        ['A', a],
        ['B', b],
      ] as const) {
        const refused = await requestToken(server, tenant);
        assert.equal(refused.statusCode, 400, `${name}: ${refused.body}`);
        assert.deepEqual(refused.json(), {
          error: 'invalid_client',
          error_description: 'Client authentication failed',
        });
      }
      // The token issued before the revocation: still accepted where the read is fresh.
      await assertAccepted(a, tenant.subscriptionKey, token, 'A, 20 s after its read');
      await assertAccepted(b, tenant.subscriptionKey, token, 'B, 10 s after its read');

      // t = 29.999 s, then 30 s: A's read is 30 s old, and A refuses the token.
      t.mock.timers.tick(CACHE_MS - 20_000 - 1);
      await assertAccepted(a, tenant.subscriptionKey, token, 'A, 1 ms before its read is 30 s old');
      t.mock.timers.tick(1);
      const refusedByA = await read(a, tenant.subscriptionKey, token);
      assert.equal(refusedByA.status, 401, 'A, 30 s after its read (10 s after the revocation)');
      assert.deepEqual(refusedByA.body, {
        statusCode: 401,
        errors: [{ message: 'The access token was revoked' }],
      });
      assert.equal(
        refusedByA.challenge,
        'Bearer realm="sfa-backoffice", error="invalid_token", error_description="The access token was revoked"',
      );
      await assertAccepted(b, tenant.subscriptionKey, token, 'B, 20 s after its read');

      // t = 39.999 s, then 40 s: 30 s after B's read.
      t.mock.timers.tick(10_000 - 1);
      await assertAccepted(b, tenant.subscriptionKey, token, 'B, 1 ms before its read is 30 s old');
      t.mock.timers.tick(1);
      const refusedByB = await read(b, tenant.subscriptionKey, token);
      assert.equal(refusedByB.status, 401, 'B, 30 s after its read');
      assert.deepEqual(refusedByB.body, refusedByA.body);
      assert.equal(refusedByB.challenge, refusedByA.challenge);

      // Refused from then on, and still no new token; a new client of the tenant (`client add`) works.
      t.mock.timers.tick(5 * CACHE_MS);
      const fresh = await addClient(db, tenant.tenantId);
      for (const server of [a, b]) {
        assert.equal((await read(server, tenant.subscriptionKey, token)).status, 401);
        assert.equal((await requestToken(server, tenant)).statusCode, 400);
        const freshToken = await accessToken(injectTransport(server), fresh);
        await assertAccepted(server, tenant.subscriptionKey, freshToken, 'a client that was not revoked');
      }
    });
  });
}
