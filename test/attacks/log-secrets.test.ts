import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { buildApp } from '../../src/app.js';
import { addClient, addSubscriptionKey } from '../../src/auth/credentials.js';
import { revokeSubscriptionKey } from '../../src/sql/credentials.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer, delivery } from '../helpers/read-data.js';

/*
 * Secrets are never written to a log: an app logging at trace level into a stream
 * this test reads goes through every kind of call (tokens by form, JSON and Basic, refused tokens,
 * batches, reads, acknowledgement, refused credentials, credentials put where they do not belong),
 * and then the whole log is searched for every key, client secret, token, server secret and stored
 * hash, whole and in parts and encodings. None may appear.
 */

const FORM = 'application/x-www-form-urlencoded';

for (const backend of backends()) {
  describe(`secrets in the log on ${backend.name}`, () => {
    test('a full run at trace level: no key, secret, token or hash in any log line', async () => {
      const db = await backend.db();
      const lines: string[] = [];
      const app = await buildApp({
        db,
        config: { ...testAuthConfig, rateLimitPerMinute: 1000 },
        logLevel: 'trace',
        logStream: { write: (line: string) => lines.push(line) },
      });
      after(() => app.close());

      const a = await createTenant(db, `logs-${randomUUID()}`);
      const b = await createTenant(db, `logs-${randomUUID()}`);
      const spareKey = await addSubscriptionKey(db, a.tenantId);
      const spareClient = await addClient(db, a.tenantId);
      await revokeSubscriptionKey(db, a.tenantId, spareKey.keyId);
      const wrongSecret = `wrong-${randomUUID()}`;
      const secrets: string[] = [
        a.subscriptionKey,
        a.clientSecret,
        b.subscriptionKey,
        b.clientSecret,
        spareKey.subscriptionKey,
        spareClient.clientSecret,
        wrongSecret,
      ];

      const inject = (options: InjectOptions) => app.inject(options);
      const token = async (
        payload: string,
        type: string,
        headers: Record<string, string> = {},
        url = '/token',
      ) => inject({ method: 'POST', url, headers: { 'content-type': type, ...headers }, payload });
      const form = (id: string, secret: string) =>
        new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: id,
          client_secret: secret,
        }).toString();

      // Tokens: by form, JSON, Basic, with the key; refused ones; secrets in the query string.
      const tokens: string[] = [];
      const issued = [
        await token(form(a.clientId, a.clientSecret), FORM),
        await token(
          JSON.stringify({
            grant_type: 'client_credentials',
            client_id: b.clientId,
            client_secret: b.clientSecret,
          }),
          'application/json',
        ),
        await token('grant_type=client_credentials', FORM, {
          authorization: `Basic ${Buffer.from(`${spareClient.clientId}:${spareClient.clientSecret}`).toString('base64')}`,
          'subscription-key': a.subscriptionKey,
        }),
      ];
      for (const response of issued) {
        assert.equal(response.statusCode, 200, response.body);
        tokens.push(response.json().access_token);
      }
      secrets.push(
        ...tokens,
        Buffer.from(`${spareClient.clientId}:${spareClient.clientSecret}`).toString('base64'),
      );
      assert.equal((await token(form(a.clientId, wrongSecret), FORM)).statusCode, 400);
      assert.equal((await token(form(wrongSecret, a.clientSecret), FORM)).statusCode, 400);
      await token(form(a.clientId, a.clientSecret), FORM, { 'subscription-key': b.subscriptionKey });
      await token(
        '',
        FORM,
        {},
        `/token?client_secret=${encodeURIComponent(a.clientSecret)}&client_id=${a.clientId}`,
      );

      const headersA = { 'subscription-key': a.subscriptionKey, authorization: `Bearer ${tokens[0]}` };
      const headersB = { 'subscription-key': b.subscriptionKey, authorization: `Bearer ${tokens[1]}` };
      const post = (headers: Record<string, string>, url: string, body: unknown) =>
        inject({
          method: 'POST',
          url,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });

      // Work of both tenants: batches (valid and invalid), reads, acknowledgement.
      assert.equal(
        (await post(headersA, '/api/products/batch-create', [{ code: 'P1', description: 'x' }])).statusCode,
        201,
      );
      assert.equal(
        (
          await post(headersA, '/api/prices/batch-create', [
            { product_code: 'P1', price_list: 'L', price: 1 },
          ])
        ).statusCode,
        201,
      );
      assert.equal((await post(headersB, '/api/customers/batch-create', [customer('C1')])).statusCode, 201);
      assert.equal((await post(headersB, '/api/deliveries/batch-create', [delivery('D1')])).statusCode, 201);
      assert.equal((await post(headersB, '/v1/deliveries/acknowledge', ['D1', 'D2'])).statusCode, 200);
      assert.equal(
        (await post(headersA, '/api/stocks/batch-create', [{ product_code: 'NOPE' }])).statusCode,
        400,
      );
      // A careless client putting credentials into a batch or a query string.
      await post(headersA, '/api/users/batch-create', [{ code: a.subscriptionKey, name: a.clientSecret }]);
      for (const url of [
        `/v1/customers?client_id=C1&subscription_key=${encodeURIComponent(a.subscriptionKey)}`,
        `/v1/customers?access_token=${tokens[0]}`,
        '/v1/deliveries/pending?limit=5',
        '/v1/customers',
      ]) {
        await inject({ method: 'GET', url, headers: headersB });
      }

      // Refused credentials: crossed tenants, revoked key, a token of one tenant with the key of another,
      // a tampered token, a key that does not exist.
      const refused = [
        { ...headersA, authorization: headersB.authorization },
        { ...headersA, 'subscription-key': spareKey.subscriptionKey },
        { ...headersA, authorization: `Bearer ${tokens[0]!.slice(0, -4)}AAAA` },
        { ...headersA, 'subscription-key': `${a.subscriptionKey.slice(0, -3)}xyz` },
        { ...headersA, authorization: `Bearer ${a.clientSecret}` },
      ];
      for (const headers of refused) {
        const response = await post(headers, '/api/products/batch-create', [
          { code: 'P2', description: 'y' },
        ]);
        assert.equal(response.statusCode, 401, response.body);
      }

      // The server's own secrets and the stored hashes count as secrets too.
      const stored = await db.query<{ value: string }>(
        `SELECT value FROM settings
         UNION ALL SELECT key_hash FROM subscription_keys WHERE tenant_id = ANY($1)
         UNION ALL SELECT secret_hash FROM api_clients WHERE tenant_id = ANY($1)`,
        [[a.tenantId, b.tenantId]],
      );
      secrets.push(...stored.map((row) => row.value));

      const log = lines.join('');
      assert.ok(lines.length > 40, `a real log: ${lines.length} lines`);
      assert.match(log, /\[redacted\]/, 'the secret in a query string was seen and redacted');
      assert.match(log, /"msg":"access token issued"/);
      const forms = (secret: string) => {
        const parts = [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)];
        // The secret half of a key, and the signature of a token, are secrets on their own.
        const dot = secret.lastIndexOf('.');
        if (dot > 0 && secret.length - dot > 20) parts.push(secret.slice(dot + 1));
        return parts;
      };
      let searched = 0;
      for (const secret of secrets) {
        for (const form of forms(secret)) {
          searched++;
          assert.ok(!log.includes(form), `a secret reached the log: ${form.slice(0, 12)}...`);
        }
      }
      assert.ok(searched >= 2 * secrets.length);
    });

    test('query parameter names spelled another way are redacted in the incoming request line', async () => {
      const db = await backend.db();
      const lines: string[] = [];
      const app = await buildApp({
        db,
        config: testAuthConfig,
        logLevel: 'info',
        logStream: { write: (line: string) => lines.push(line) },
      });
      after(() => app.close());
      const spellings = [
        'client%5Fsecret',
        'subscription%2Dkey',
        '%6Bey',
        'api_key',
        'password',
        'clientSecret',
        'Authorization',
        'ACCESS-TOKEN',
        'client_secret%5B%5D',
      ];
      for (const [n, name] of spellings.entries()) {
        for (const path of ['/v1/customers', '/token']) {
          await app.inject({
            method: path === '/token' ? 'POST' : 'GET',
            url: `${path}?${name}=CANARY${n}x`,
          });
        }
      }
      const incoming = lines.filter((line) => line.includes('"msg":"incoming request"'));
      assert.equal(incoming.length, 2 * spellings.length);
      for (const [n, name] of spellings.entries()) {
        assert.ok(!lines.join('').includes(`CANARY${n}x`), `${name} reached the log`);
        assert.ok(
          incoming.some((line) => line.includes(`${name}=[redacted]`)),
          name,
        );
      }
    });
  });
}
