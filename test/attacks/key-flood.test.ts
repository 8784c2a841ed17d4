import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { accessToken } from '../../kit/token.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { generateSubscriptionKey } from '../../src/auth/subscription-key.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { metricValue } from '../helpers/metrics.js';

/*
 * Issue 12 item 6: a valid token with random, well-formed subscription keys used to cost a database
 * lookup each (2,000 requests, about 4,000 transactions). Lookups that find no valid key are now
 * limited per tenant of the token; past the limit such requests get 429 before any lookup, while keys
 * already cached still pass. Lookups are read from the app's metric sfa_subscription_key_lookups_total.
 */

const lookups = (app: FastifyInstance) => metricValue(app, 'sfa_subscription_key_lookups_total');

for (const backend of backends()) {
  describe(`unknown subscription keys on ${backend.name}`, () => {
    test('2,000 random key ids with a valid token: a few lookups, then 429; real keys unaffected', async () => {
      const db = await backend.db();
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => app.close());
      const tenant = await createTenant(db, `keys-${randomUUID()}`);
      const other = await createTenant(db, `keys-${randomUUID()}`);
      const token = await accessToken(injectTransport(app), tenant);
      const otherToken = await accessToken(injectTransport(app), other);
      const get = (key: string, bearer = token) =>
        app.inject({
          method: 'GET',
          url: '/v1/customers?limit=1',
          headers: { 'subscription-key': key, authorization: `Bearer ${bearer}` },
        });
      assert.equal((await get(tenant.subscriptionKey)).statusCode, 200);
      const before = await lookups(app);

      const statuses = new Map<number, number>();
      for (let round = 0; round < 20; round++) {
        const answers = await Promise.all(
          Array.from({ length: 100 }, () => get(generateSubscriptionKey().subscriptionKey)),
        );
        for (const answer of answers) {
          statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
          if (answer.statusCode === 429) {
            assert.ok(Number(answer.headers['retry-after']) >= 1);
            assert.match(
              answer.json().errors[0].message,
              /^Too many requests with an invalid subscription key/,
            );
          }
        }
      }
      const flood = (await lookups(app)) - before;
      console.log(
        `${backend.name}: 2,000 random keys: ${flood} lookups; answers ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      assert.ok(flood <= 25, `${flood} lookups`);
      assert.equal((statuses.get(401) ?? 0) + (statuses.get(429) ?? 0), 2000);
      assert.ok((statuses.get(429) ?? 0) >= 1900);

      // The tenant's real key, cached before, still passes with no lookup; another tenant is untouched.
      assert.equal((await get(tenant.subscriptionKey)).statusCode, 200);
      assert.equal(await lookups(app), before + flood, 'the real key is still cached');
      assert.equal((await get(other.subscriptionKey, otherToken)).statusCode, 200);
      assert.equal((await get(generateSubscriptionKey().subscriptionKey, otherToken)).statusCode, 401);
    });

    test('a burst of one real key on a cold cache is one lookup, and not taken for a flood', async () => {
      const db = await backend.db();
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => app.close());
      const tenant = await createTenant(db, `keys-${randomUUID()}`);
      const headers = {
        'subscription-key': tenant.subscriptionKey,
        authorization: `Bearer ${await accessToken(injectTransport(app), tenant)}`,
      };
      const before = await lookups(app);
      const answers = await Promise.all(
        Array.from({ length: 100 }, () =>
          app.inject({ method: 'GET', url: '/v1/customers?limit=1', headers }),
        ),
      );
      assert.deepEqual(new Set(answers.map((answer) => answer.statusCode)), new Set([200]));
      assert.equal((await lookups(app)) - before, 1);
    });
  });
}
