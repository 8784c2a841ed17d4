import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../src/http/problems.js';
import { appForNewTenant } from '../helpers/app.js';

/*
 * While the database cannot be reached, every answer says to come back (issue #41, decision 0143):
 * the contract's batch endpoints their own 500 "Error connecting to database" (backoffice-api.md
 * 7.1 allows them only 201, 400 and 500), every other endpoint 503; both with Retry-After. A failure
 * that is not the database's absence stays a 500 without one: sending again would not help.
 */

const CONNECTION = 'Error connecting to database: ';
const RETRY_AFTER = String(DATABASE_RETRY_AFTER_SECONDS);

async function privatePglite(): Promise<Database> {
  const db = await openPglite(undefined);
  await migrate(db);
  return db;
}

/** A tenant with its token, then the database gone from under the app. */
async function tenantOfAClosedDatabase() {
  const db = await privatePglite();
  const tenant = await appForNewTenant(db);
  await db.close();
  return tenant;
}

function assertComeBack(
  answer: { status: number; body: any; headers: Record<string, string> },
  status: number,
) {
  const shown = JSON.stringify(answer.body);
  assert.equal(answer.status, status, shown);
  assert.equal(answer.headers['retry-after'], RETRY_AFTER, shown);
  assert.equal(answer.body.statusCode, status, shown);
  assert.equal(answer.body.errors.length, 1, shown);
  assert.ok(answer.body.errors[0].message.startsWith(CONNECTION), shown);
}

describe('come back: the database cannot be reached', () => {
  test("a batch endpoint answers the contract's 500, with Retry-After", async () => {
    const tenant = await tenantOfAClosedDatabase();
    const answer = await tenant.post('/api/payment-methods/batch-create', [
      { code: 'EF', description: 'Cash' },
    ]);
    assertComeBack(answer, 500);
  });

  test('a keyed batch too: its 500 is not kept, and says to come back', async () => {
    const tenant = await tenantOfAClosedDatabase();
    const answer = await tenant.post(
      '/api/payment-methods/batch-create',
      [{ code: 'EF', description: 'Cash' }],
      {
        'idempotency-key': 'come-back-1',
      },
    );
    assertComeBack(answer, 500);
  });

  test('the read endpoints, the feed and the management endpoints answer 503 with Retry-After', async () => {
    const tenant = await tenantOfAClosedDatabase();
    for (const path of [
      '/v1/customers',
      '/v1/deliveries/pending',
      '/v1/changes',
      '/v1/jobs',
      '/v1/webhooks',
    ]) {
      assertComeBack(await tenant.get(path), 503);
    }
    assertComeBack(
      await tenant.post('/v1/webhooks', { url: 'https://example.com/hook', resources: ['customers'] }),
      503,
    );
    assertComeBack(await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' }), 503);
  });

  test('/ready answers 503 with Retry-After', async () => {
    const tenant = await tenantOfAClosedDatabase();
    const answer = await tenant.transport.send({ path: '/ready' });
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['retry-after'], RETRY_AFTER);
  });

  test("/token answers OAuth's 503 temporarily_unavailable with Retry-After", async () => {
    const tenant = await tenantOfAClosedDatabase();
    const answer = await tenant.transport.send({
      method: 'POST',
      path: '/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'subscription-key': tenant.tenant.subscriptionKey,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: tenant.tenant.clientId,
        client_secret: tenant.tenant.clientSecret,
      }).toString(),
    });
    assert.equal(answer.status, 503, answer.text);
    assert.equal(answer.body.error, 'temporarily_unavailable', answer.text);
    assert.equal(answer.headers['retry-after'], RETRY_AFTER);
  });
});

describe('not come back: a statement that fails on a reachable database', () => {
  test('a read whose table is gone is a 500 without Retry-After', async () => {
    const db = await privatePglite();
    const tenant = await appForNewTenant(db);
    await db.exec('DROP TABLE customers CASCADE');
    const answer = await tenant.get('/v1/customers');
    assert.equal(answer.status, 500, answer.text);
    assert.match(answer.body.errors[0].message, /^Database operation failed: /);
    assert.equal(answer.headers['retry-after'], undefined);
    await db.close();
  });
});
