import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import type { TenantClient } from '../../kit/tenant-client.js';
import { type Answer, injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { WORKER_BODY_BYTES } from '../../src/body-threads/batch-worker-pool.js';
import type { Database, Queryable } from '../../src/db/database.js';
import { appForNewTenant, seedProducts, testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * extensions.md 8: an Idempotency-Key makes a POST safe to send again. The first request runs and
 * its answer is kept with its writes; a repeat gets that answer byte for byte and writes nothing.
 */

const PRODUCTS = '/api/products/batch-create';
const STOCKS = '/api/stocks/batch-create';
const ACKNOWLEDGE = '/v1/deliveries/acknowledge';

/** A POST with the tenant's credentials and, unless undefined, an Idempotency-Key. */
function send(tenant: TenantClient, path: string, body: unknown, key: string | undefined): Promise<Answer> {
  return tenant.post(path, body, key === undefined ? {} : { 'idempotency-key': key });
}

const products = (n: number, description = 'product') =>
  Array.from({ length: n }, (_, i) => ({ code: `P${i}`, description: `${description} ${i}` }));

async function keptRows(db: Queryable, tenantId: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = $1',
    [tenantId],
  );
  return row!.n;
}

/** The change feed's position of the tenant's products: moves whenever a batch writes them. */
async function lastWrite(db: Queryable, tenantId: number): Promise<string> {
  const [row] = await db.query<{ xid: string }>(
    'SELECT max(change_xid::text::bigint)::text AS xid FROM products WHERE tenant_id = $1',
    [tenantId],
  );
  return row!.xid;
}

/** A database whose batch write statement fails once (a 500) when armed. */
function failingOnce(db: Database, statement = 'WITH written'): Database & { arm(): void } {
  let armed = false;
  const wrap = (q: Queryable): Queryable => ({
    query: (text, params) => {
      if (armed && text.startsWith(statement)) {
        armed = false;
        return Promise.reject(Object.assign(new Error('simulated failure'), { code: '08006' }));
      }
      return q.query(text, params);
    },
    exec: (script) => q.exec(script),
  });
  return Object.assign(Object.create(db) as Database, {
    ...wrap(db),
    transaction: <T>(work: (tx: Queryable) => Promise<T>) => db.transaction((tx) => work(wrap(tx))),
    arm() {
      armed = true;
    },
  });
}

for (const backend of backends()) {
  describe(`Idempotency-Key (${backend.name})`, () => {
    test('a repeat gets the first answer byte for byte, marked replayed, and writes nothing', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const key = randomUUID();
      const first = await send(tenant, PRODUCTS, products(3), key);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers['idempotent-replayed'], undefined);
      assert.deepEqual(JSON.parse(first.text), {
        statusCode: 201,
        message: 'Products created successfully',
        created: 3,
        updated: 0,
        ignored: 0,
      });
      const written = await lastWrite(db, tenant.tenant.tenantId);
      const again = await send(tenant, PRODUCTS, products(3), key);
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.headers['content-type'], first.headers['content-type']);
      // Without the key the same batch is an update of 3 existing rows; with it, nothing ran.
      assert.equal(await lastWrite(db, tenant.tenant.tenantId), written);
      assert.equal(await keptRows(db, tenant.tenant.tenantId), 1);
    });

    test('without the header nothing changes: every request runs', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      assert.equal((await send(tenant, PRODUCTS, products(2), undefined)).status, 201);
      const second = await send(tenant, PRODUCTS, products(2), undefined);
      assert.equal(JSON.parse(second.text).updated, 2);
      assert.equal(second.headers['idempotent-replayed'], undefined);
      assert.equal(await keptRows(db, tenant.tenant.tenantId), 0);
    });

    test('the same key with another body, endpoint or query: 422, nothing written', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const key = randomUUID();
      assert.equal((await send(tenant, PRODUCTS, products(2), key)).status, 201);
      const written = await lastWrite(db, tenant.tenant.tenantId);
      const expected = {
        statusCode: 422,
        errors: [{ message: 'Idempotency-Key was used with a different request' }],
      };
      for (const [path, body] of [
        [PRODUCTS, products(2, 'other')],
        [PRODUCTS, `${JSON.stringify(products(2))} `],
        [`${PRODUCTS}?outcomes=true`, products(2)],
        ['/api/payment-methods/batch-create', [{ code: 'C1', description: 'Cash' }]],
        [ACKNOWLEDGE, ['D1']],
      ] as const) {
        const answer = await send(tenant, path, body, key);
        assert.equal(answer.status, 422, `${path}: ${answer.text}`);
        assert.deepEqual(JSON.parse(answer.text), expected);
      }
      assert.equal(await lastWrite(db, tenant.tenant.tenantId), written);
      assert.equal(await countRows(db, 'payment_methods', tenant.tenant.tenantId), 0);
    });

    test('a malformed key: 400 naming Idempotency-Key, before anything runs', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      for (const key of ['', 'has space', 'x'.repeat(256), 'ключ', 'tab\there']) {
        const answer = await send(tenant, PRODUCTS, products(1), key);
        assert.equal(answer.status, 400, JSON.stringify(key));
        const body = JSON.parse(answer.text);
        assert.equal(body.errors[0].field, 'Idempotency-Key');
      }
      assert.equal((await send(tenant, PRODUCTS, products(1), 'x'.repeat(255))).status, 201);
      assert.equal((await send(tenant, PRODUCTS, products(1), '!~')).status, 201);
      assert.equal(await countRows(db, 'products', tenant.tenant.tenantId), 1);
    });

    test('two identical requests at the same moment: one writes, the other gets 409 or the replay', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      for (let round = 0; round < 5; round++) {
        const key = randomUUID();
        const body = products(2000, `round ${round}`);
        const answers = await Promise.all([
          send(tenant, PRODUCTS, body, key),
          send(tenant, PRODUCTS, body, key),
        ]);
        const ran = answers.filter((a) => a.status === 201 && a.headers['idempotent-replayed'] === undefined);
        assert.equal(ran.length, 1, answers.map((a) => `${a.status} ${a.text.slice(0, 100)}`).join('\n'));
        const other = answers.find((a) => a !== ran[0])!;
        if (other.status === 409) {
          assert.deepEqual(JSON.parse(other.text), {
            statusCode: 409,
            errors: [{ message: 'A request with this Idempotency-Key is in progress' }],
          });
          assert.ok(Number(other.headers['retry-after']) >= 1);
          // Once the first finished, the retry is the replay.
          const retry = await send(tenant, PRODUCTS, body, key);
          assert.equal(retry.text, ran[0]!.text);
          assert.equal(retry.headers['idempotent-replayed'], 'true');
        } else {
          assert.equal(other.status, 201);
          assert.equal(other.text, ran[0]!.text);
          assert.equal(other.headers['idempotent-replayed'], 'true');
        }
      }
    });

    test('retries of a request that has finished, sent at the same moment: every one is the replay, none 409', async () => {
      const db = await backend.db();
      // Four of the tenant's batches may run at once, so the retries do meet inside the process.
      const tenant = await appForNewTenant(db, { batchConcurrency: 4, batchConcurrencyPerTenant: 4 });
      const key = randomUUID();
      const body = products(10, 'finished');
      const first = await send(tenant, PRODUCTS, body, key);
      assert.equal(first.status, 201, first.text);
      // Nothing runs under the key any more: "in progress" would be untrue.
      const retries = await Promise.all(Array.from({ length: 4 }, () => send(tenant, PRODUCTS, body, key)));
      for (const retry of retries) {
        assert.equal(retry.status, 201, retry.text);
        assert.equal(retry.text, first.text);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
      }
    });

    if (backend.name === 'postgres') {
      test('409 while another instance runs the key: its transaction holds the key, seen across connections', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        const key = randomUUID();
        const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
        await client.connect();
        // What another instance's running request holds: the key's transaction-scoped lock.
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [
          tenant.tenant.tenantId,
          key,
        ]);
        const busy = await send(tenant, PRODUCTS, products(1), key);
        assert.equal(busy.status, 409, busy.text);
        assert.equal(busy.headers['retry-after'], '1');
        assert.equal(await countRows(db, 'products', tenant.tenant.tenantId), 0);
        // The other instance dies without committing: the key is free at once, nothing stuck.
        await client.query('ROLLBACK');
        await client.end();
        const retry = await send(tenant, PRODUCTS, products(1), key);
        assert.equal(retry.status, 201, retry.text);
      });
    }

    // A 5xx is never kept, whether the batch's write failed or the statement that keeps its answer
    // (src/sql/idempotency.ts) failed after the write: the batch is rolled back with it.
    for (const [failure, statement] of [
      ['the write', 'WITH written'],
      ['keeping the answer, after the write', 'WITH expired'],
    ] as const) {
      test(`5xx answers are not kept (${failure} failed): nothing written, the retry runs and writes once`, async () => {
        const db = await backend.db();
        const failing = failingOnce(db, statement);
        const tenant = await appForNewTenant(db);
        const app = await buildApp({ db: failing, config: testAuthConfig, logLevel: 'silent' });
        after(() => app.close());
        const view = tenant.over(injectTransport(app));
        const key = randomUUID();
        failing.arm();
        const failed = await send(view, PRODUCTS, products(3), key);
        assert.equal(failed.status, 500, failed.text);
        assert.equal(await keptRows(db, tenant.tenant.tenantId), 0);
        assert.equal(await countRows(db, 'products', tenant.tenant.tenantId), 0);
        // The failure is a connection's: its session is dropped, not rolled back, and PostgreSQL frees
        // the key's lock once it notices the closed socket. Until then a retry is told to come back
        // (409 with Retry-After), as any client's would be; it is never answered from the failure.
        let retry = await send(view, PRODUCTS, products(3), key);
        for (let asked = 1; retry.status === 409 && asked < 200; asked++) {
          assert.equal(retry.headers['retry-after'], '1', retry.text);
          await new Promise((done) => setTimeout(done, 10));
          retry = await send(view, PRODUCTS, products(3), key);
        }
        assert.equal(retry.status, 201, retry.text);
        assert.equal(JSON.parse(retry.text).created, 3);
        assert.equal(retry.headers['idempotent-replayed'], undefined);
        assert.equal(await keptRows(db, tenant.tenant.tenantId), 1);
        assert.equal((await send(view, PRODUCTS, products(3), key)).headers['idempotent-replayed'], 'true');
      });
    }

    test('the 400s of validation are kept: the same request is answered the same even after the data changed', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const key = randomUUID();
      const stocks = [{ product_code: 'NEW', location: 'L1' }];
      const refused = await send(tenant, STOCKS, stocks, key);
      assert.equal(refused.status, 400, refused.text);
      await seedProducts(tenant, ['NEW']);
      const again = await send(tenant, STOCKS, stocks, key);
      assert.equal(again.status, 400);
      assert.equal(again.text, refused.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await countRows(db, 'stocks', tenant.tenant.tenantId), 0);
      // Array-level 400s too.
      const notArray = await send(tenant, PRODUCTS, '{}', 'not-an-array');
      assert.equal(notArray.status, 400);
      assert.equal(
        (await send(tenant, PRODUCTS, '{}', 'not-an-array')).headers['idempotent-replayed'],
        'true',
      );
      const badJson = await send(tenant, PRODUCTS, '[{', 'bad-json');
      assert.deepEqual(JSON.parse(badJson.text), {
        statusCode: 400,
        errors: [{ message: 'Invalid JSON in request body' }],
      });
    });

    test("a key is the tenant's own: another tenant's same key runs its own request", async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      const key = randomUUID();
      const first = await send(a, PRODUCTS, products(2), key);
      const other = await send(b, PRODUCTS, products(2), key);
      assert.equal(other.status, 201);
      assert.equal(other.headers['idempotent-replayed'], undefined);
      assert.equal(await countRows(db, 'products', b.tenant.tenantId), 2);
      // And a different body under that key is fine for b, refused for a.
      assert.equal((await send(b, PRODUCTS, products(3), randomUUID())).status, 201);
      assert.equal((await send(a, PRODUCTS, products(2), key)).text, first.text);
    });

    test('a replay after a restart: a new app on the same database answers from the kept row', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const key = randomUUID();
      const first = await send(tenant, PRODUCTS, products(4), key);
      await tenant.transport.app.close();
      const restarted = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      after(() => restarted.close());
      const again = await send(tenant.over(injectTransport(restarted)), PRODUCTS, products(4), key);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
    });

    test('an expired answer is not replayed, and expired rows are removed as new keys are kept', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db, { idempotencyTtlSeconds: 90 });
      const key = randomUUID();
      assert.equal((await send(tenant, PRODUCTS, products(1), key)).status, 201);
      const [kept] = await db.query<{ ttl: number }>(
        `SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM idempotency_keys
          WHERE tenant_id = $1 AND key = $2`,
        [tenant.tenant.tenantId, key],
      );
      assert.equal(kept!.ttl, 90, 'kept for IDEMPOTENCY_TTL_SECONDS');
      // Its time passes: the kept answer's expiry moved into the past, as the database's clock sees it.
      await db.query(
        "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = $2",
        [tenant.tenant.tenantId, key],
      );
      // 25 long-expired answers of this tenant.
      await db.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, expires_at)
         SELECT $1, 'old-' || n, 'x', 201, '{}', now() - interval '1 day' FROM generate_series(1, 25) n`,
        [tenant.tenant.tenantId],
      );
      const again = await send(tenant, PRODUCTS, products(1), key);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], undefined, 'expired: run again');
      assert.equal(JSON.parse(again.text).updated, 1);
      // Each kept answer removes up to 20 expired ones (of any tenant): bounded steps.
      const [left] = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = $1 AND key LIKE 'old-%'",
        [tenant.tenant.tenantId],
      );
      assert.ok(left!.n <= 5, `${left!.n} expired rows left`);
      await send(tenant, PRODUCTS, products(1), randomUUID());
      assert.equal(
        (
          await db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = $1 AND key LIKE 'old-%'",
            [tenant.tenant.tenantId],
          )
        )[0]!.n,
        0,
      );
    });

    test('a large body (parsed in the worker thread) is kept and replayed the same way, dry runs too', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const body = `${JSON.stringify(products(2))}${' '.repeat(WORKER_BODY_BYTES)}`;
      const key = randomUUID();
      const dry = await send(tenant, `${PRODUCTS}?dry_run=true`, body, key);
      assert.equal(dry.status, 200, dry.text);
      const dryAgain = await send(tenant, `${PRODUCTS}?dry_run=true`, body, key);
      assert.equal(dryAgain.text, dry.text);
      assert.equal(dryAgain.headers['idempotent-replayed'], 'true');
      assert.equal(await countRows(db, 'products', tenant.tenant.tenantId), 0);
      const other = randomUUID();
      const first = await send(tenant, `${PRODUCTS}?outcomes=true`, body, other);
      assert.equal(first.status, 201, first.text);
      const again = await send(tenant, `${PRODUCTS}?outcomes=true`, body, other);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal((await send(tenant, `${PRODUCTS}?outcomes=true`, `${body} `, other)).status, 422);
    });

    test('the acknowledgement takes a key too: replayed without acknowledging again', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const key = randomUUID();
      const first = await send(tenant, ACKNOWLEDGE, ['D1', 'D2'], key);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(JSON.parse(first.text).notFound, ['D1', 'D2']);
      const again = await send(tenant, ACKNOWLEDGE, ['D1', 'D2'], key);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal((await send(tenant, ACKNOWLEDGE, ['D1'], key)).status, 422);
      const invalid = await send(tenant, ACKNOWLEDGE, [5], 'bad');
      assert.equal(invalid.status, 400);
      assert.equal((await send(tenant, ACKNOWLEDGE, [5], 'bad')).headers['idempotent-replayed'], 'true');
      // The array rules' 400s are kept too: replayed, and the key is the empty array's alone.
      const empty = await send(tenant, ACKNOWLEDGE, [], 'empty');
      assert.equal(empty.status, 400, empty.text);
      const emptyAgain = await send(tenant, ACKNOWLEDGE, [], 'empty');
      assert.equal(emptyAgain.headers['idempotent-replayed'], 'true');
      assert.equal(emptyAgain.text, empty.text);
      assert.equal((await send(tenant, ACKNOWLEDGE, ['D1'], 'empty')).status, 422);
      // A malformed key is refused here too, before anything runs.
      const malformed = await send(tenant, ACKNOWLEDGE, ['D1'], 'two words');
      assert.equal(malformed.status, 400);
      assert.equal(JSON.parse(malformed.text).errors[0].field, 'Idempotency-Key');
    });
  });
}
