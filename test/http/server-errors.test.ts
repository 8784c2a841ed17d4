import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import type { TenantClient } from '../../kit/tenant-client.js';
import { buildApp } from '../../src/app.js';
import { ValidationCrash } from '../../src/batch/batch-errors.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import { serverErrorMessage } from '../../src/http/server-errors.js';
import { appForNewTenant, seedProducts, testAuthConfig } from '../helpers/app.js';

/*
 * The 500 bodies of backoffice-api.md 7.1, caused by real failures: a closed or unreachable database,
 * a statement that fails. Each body has one error whose message starts with the spec's prefix, names
 * the request id, and shows no SQL and no stack trace.
 */

const CONNECTION = 'Error connecting to database: ';
const OPERATION = 'Database operation failed: ';

const PAYMENT = { path: '/api/payment-methods/batch-create', body: [{ code: 'EF', description: 'Cash' }] };
const STOCK = {
  path: '/api/stocks/batch-create',
  body: [{ product_code: 'P1', location: 'W1', quantity: 1 }],
};

/** Words of SQL, names of tables, and the marks of a stack trace: none may reach the client. */
const LEAKS =
  /\b(select|insert|update|delete|from|into|unnest|returning|conflict|where|payment_methods|stocks|products|tenants)\b|\\n|\bat \S+ \(|\.[jt]s:\d+|node_modules|Error:/i;

interface Answer {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

async function postWithId(
  app: FastifyInstance,
  path: string,
  body: unknown,
  headers: Record<string, string>,
) {
  const requestId = `req-${randomUUID()}`;
  const response = await app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    payload: JSON.stringify(body),
  });
  const answer: Answer = { status: response.statusCode, body: response.json(), headers: response.headers };
  return { answer, requestId };
}

/** Posts as the tenant, with a request id of its own. */
async function post(tenant: TenantClient, path: string, body: unknown) {
  const requestId = `req-${randomUUID()}`;
  const answer = await tenant.post(path, body, { 'x-request-id': requestId });
  return { answer, requestId };
}

function assertServerError(answer: { status: number; body: any }, requestId: string, prefix: string): void {
  const shown = JSON.stringify(answer.body);
  assert.equal(answer.status, 500, shown);
  assert.deepEqual(Object.keys(answer.body).sort(), ['errors', 'statusCode'], shown);
  assert.equal(answer.body.statusCode, 500);
  assert.equal(answer.body.errors.length, 1, shown);
  assert.deepEqual(Object.keys(answer.body.errors[0]), ['message'], shown);
  const message: string = answer.body.errors[0].message;
  assert.ok(message.startsWith(prefix), `"${message}" starts with "${prefix}"`);
  assert.ok(message.length > prefix.length, 'a detail follows the prefix');
  assert.ok(message.includes(requestId), `"${message}" names the request id ${requestId}`);
  assert.doesNotMatch(shown.replace(requestId, ''), LEAKS, 'no SQL, no table, no stack trace');
}

/** A new, empty, migrated PGlite in memory that only this test uses (and may break). */
async function privatePglite(): Promise<Database> {
  const db = await openPglite(undefined);
  await migrate(db);
  return db;
}

describe('500: the database is closed', () => {
  test('pglite: closed after the tenant got its token', async () => {
    const db = await privatePglite();
    const tenant = await appForNewTenant(db);
    await db.close();
    for (const request of [PAYMENT, STOCK]) {
      const { answer, requestId } = await post(tenant, request.path, request.body);
      assertServerError(answer, requestId, CONNECTION);
    }
  });

  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    test('postgres: the pool ended after the tenant got its token', async () => {
      const db = openPostgres({ connectionString: url, poolSize: 2 });
      await migrate(db);
      const tenant = await appForNewTenant(db);
      await db.close();
      for (const request of [PAYMENT, STOCK]) {
        const { answer, requestId } = await post(tenant, request.path, request.body);
        assertServerError(answer, requestId, CONNECTION);
      }
    });
  }

  test('postgres: no server listening (connection refused)', async () => {
    const db = openPostgres({ connectionString: 'postgres://nobody@127.0.0.1:1/none', poolSize: 1 });
    after(() => db.close());
    const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
    after(() => app.close());
    const { answer, requestId } = await postWithId(app, PAYMENT.path, PAYMENT.body, {
      'subscription-key': 'any-key',
      authorization: 'Bearer any.token.here',
    });
    assertServerError(answer, requestId, CONNECTION);
    assert.equal(answer.headers['x-request-id'], requestId, 'the request id is echoed');
  });

  test('a database out of reach is one warn line with its reason, not an error with a stack', async () => {
    const db = openPostgres({ connectionString: 'postgres://nobody@127.0.0.1:1/none', poolSize: 1 });
    after(() => db.close());
    const lines: string[] = [];
    const app = await buildApp({
      db,
      config: testAuthConfig,
      logLevel: 'info',
      logStream: { write: (line: string) => lines.push(line) },
    });
    after(() => app.close());
    const { requestId } = await postWithId(app, PAYMENT.path, PAYMENT.body, {
      'subscription-key': 'any-key',
      authorization: 'Bearer any.token.here',
    });
    const told = lines
      .map((line) => JSON.parse(line))
      .filter((line) => line.reqId === requestId && line.level >= 40);
    assert.equal(told.length, 1, JSON.stringify(told));
    assert.equal(told[0].level, 40);
    assert.equal(told[0].msg, 'database unavailable: answered to come back');
    assert.equal(told[0].code, 'ECONNREFUSED');
    assert.match(told[0].reason, /ECONNREFUSED/);
    assert.equal(told[0].err, undefined, 'no error object, so no stack');
  });
});

describe('500: a database operation fails', () => {
  async function breakAndPost(db: Database) {
    const tenant = await appForNewTenant(db);
    await seedProducts(tenant, ['P1']);
    // The writes of both fail: their tables are gone.
    await db.exec('DROP TABLE payment_methods; DROP TABLE stocks;');
    for (const request of [PAYMENT, STOCK]) {
      const { answer, requestId } = await post(tenant, request.path, request.body);
      assertServerError(answer, requestId, OPERATION);
    }
    // Invalid input is still a 400: validation comes before the database.
    const invalid = await tenant.post(PAYMENT.path, [{ code: 'EF' }]);
    assert.equal(invalid.status, 400);
  }

  test('pglite: tables dropped from a private database', async () => {
    const db = await privatePglite();
    after(() => db.close());
    await breakAndPost(db);
  });

  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    test('postgres: tables dropped from a database created for this test', async () => {
      const scratch = await scratchPostgresDatabase(url);
      const db = openPostgres({ connectionString: scratch.url, poolSize: 2 });
      try {
        await migrate(db);
        await breakAndPost(db);
      } finally {
        await db.close();
        await scratch.drop();
      }
    });
  }
});

describe('serverErrorMessage', () => {
  const id = 'req-123';

  test('any other failure: "Unexpected error: ", without the error text', () => {
    for (const error of [
      new Error('SELECT secret FROM credentials'),
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'a thrown string',
      undefined,
      null,
      { code: 42 },
      { code: 'not-a-sqlstate' },
    ]) {
      const message = serverErrorMessage(error, id);
      assert.ok(message.startsWith('Unexpected error: '), message);
      assert.ok(message.includes(id), message);
      assert.doesNotMatch(message, /SELECT|secret|credentials|Cannot read|thrown string/);
    }
  });

  test('a crash inside validation: "Unexpected validation error: "', () => {
    const message = serverErrorMessage(new ValidationCrash(new Error('boom in field check')), id);
    assert.ok(message.startsWith('Unexpected validation error: '), message);
    assert.ok(message.includes(id));
    assert.doesNotMatch(message, /boom/);
  });

  test('connection codes and SQLSTATE classes 08 and 57P: "Error connecting to database: "', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'ENOTFOUND',
      '08006',
      '08001',
      '57P01',
      '53300',
    ]) {
      const message = serverErrorMessage(Object.assign(new Error(`failure ${code}`), { code }), id);
      assert.ok(message.startsWith(CONNECTION), `${code}: ${message}`);
      assert.ok(message.includes(id));
    }
  });

  test('other SQLSTATEs: "Database operation failed: ", without the statement', () => {
    for (const code of ['42P01', '23505', '22003', '40001', 'XX000']) {
      const error = Object.assign(new Error('relation "payment_methods" does not exist'), {
        code,
        query: 'INSERT INTO payment_methods VALUES ($1)',
      });
      const message = serverErrorMessage(error, id);
      assert.ok(message.startsWith(OPERATION), `${code}: ${message}`);
      assert.ok(message.includes(id));
      assert.doesNotMatch(message, /INSERT|payment_methods|relation/);
    }
  });
});
