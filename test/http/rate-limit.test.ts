import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { addSubscriptionKey } from '../../src/auth/credentials.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import type { Database, Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { LeasingRateLimitStore, leaseSize, MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp, testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * Rate limit per subscription key: RATE_LIMIT_PER_MINUTE requests per key and
 * fixed one-minute window, then 429 with Retry-After; every counted answer carries RateLimit-Limit,
 * RateLimit-Remaining and RateLimit-Reset. On PostgreSQL the count is shared by every instance,
 * which claims it in blocks of leaseSize(limit) hits (quota leases).
 */

const LIST = '/v1/customers';
const PRODUCTS = '/api/products/batch-create';

function get(
  tenant: TenantClient<NewTenant, InjectTransport>,
  headers: Record<string, string> = tenant.headers,
) {
  return tenant.transport.app.inject({ method: 'GET', url: LIST, headers });
}

/**
 * The clock the apps of these tests count their windows on: stopped 15 s into a window, so that every
 * request of a test falls in one window however slowly it runs, and Reset is 45 s throughout.
 */
const WINDOW_START = Date.UTC(2026, 0, 1, 12, 0, 0);
const stopped = () => WINDOW_START + 15_000;
const RESET = '45';

function assertHeaders(response: LightMyRequestResponse, limit: number, remaining: number) {
  assert.equal(response.headers['ratelimit-limit'], String(limit));
  assert.equal(response.headers['ratelimit-remaining'], String(remaining));
  assert.equal(response.headers['ratelimit-reset'], RESET);
}

function assertTooMany(response: LightMyRequestResponse, limit: number) {
  assert.equal(response.statusCode, 429, response.body);
  assertHeaders(response, limit, 0);
  assert.equal(response.headers['retry-after'], response.headers['ratelimit-reset']);
  const body = response.json();
  assert.deepEqual(Object.keys(body).sort(), ['errors', 'statusCode']);
  assert.equal(body.statusCode, 429);
  assert.equal(body.errors.length, 1);
  assert.match(
    body.errors[0].message,
    new RegExp(
      `^Rate limit of ${limit} requests per 60 seconds exceeded for this subscription key; retry in \\d+ seconds$`,
    ),
  );
}

async function newApp(
  db: Database,
  rateLimitPerMinute: number,
): Promise<TenantClient<NewTenant, InjectTransport>> {
  const tenant = await ownedTenantApp(db, {
    config: { ...testAuthConfig, rateLimitPerMinute },
    rateLimitClock: stopped,
  });
  after(() => tenant.transport.app.close());
  return tenant;
}

for (const backend of backends()) {
  describe(`rate limit on ${backend.name}`, () => {
    test('past the limit: 429 with Retry-After and the RateLimit fields; every counted answer has them', async () => {
      const db = await backend.db();
      const limit = 5;
      const tenant = await newApp(db, limit);
      for (let n = 1; n <= limit; n++) {
        const response = await get(tenant);
        assert.equal(response.statusCode, 200);
        assertHeaders(response, limit, limit - n);
      }
      assertTooMany(await get(tenant), limit);
      // Batch endpoints count too, and a refused batch writes nothing: the 429 comes before the body.
      const batch = await tenant.transport.app.inject({
        method: 'POST',
        url: PRODUCTS,
        headers: { ...tenant.headers, 'content-type': 'application/json' },
        payload: JSON.stringify([{ code: 'RL1', description: 'refused' }]),
      });
      assertTooMany(batch, limit);
      assert.equal(await countRows(db, 'products', tenant.tenant.tenantId), 0, 'nothing written');
    });

    test('counted per subscription key: another key, another tenant, and unauthenticated requests are apart', async () => {
      const db = await backend.db();
      const limit = 3;
      const a = await newApp(db, limit);
      const b = await ownedTenantApp(db, {}, { app: a.transport.app });
      for (let n = 0; n < limit; n++) assert.equal((await get(a)).statusCode, 200);
      assertTooMany(await get(a), limit);

      // A second key of the same tenant has a count of its own.
      const spare = await addSubscriptionKey(db, a.tenant.tenantId);
      const withSpare = { ...a.headers, 'subscription-key': spare.subscriptionKey };
      const other = await get(a, withSpare);
      assert.equal(other.statusCode, 200);
      assertHeaders(other, limit, limit - 1);
      // Another tenant is not touched.
      const fromB = await get(b);
      assert.equal(fromB.statusCode, 200);
      assertHeaders(fromB, limit, limit - 1);
      // A refused credential is a 401 and is not counted against anyone.
      const refused = await get(a, { ...a.headers, authorization: 'Bearer x.y.z' });
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.headers['ratelimit-limit'], undefined);
      // /health, /ready and /token are not limited.
      for (const url of ['/health', '/ready']) {
        const open = await a.transport.app.inject({ method: 'GET', url });
        assert.equal(open.statusCode, 200);
        assert.equal(open.headers['ratelimit-limit'], undefined);
      }
    });

    test('RATE_LIMIT_PER_MINUTE=0 (and an app built without it) counts nothing', async () => {
      const db = await backend.db();
      for (const tenant of [await newApp(db, 0), await ownedTenantApp(db)]) {
        for (let n = 0; n < 20; n++) {
          const response = await get(tenant);
          assert.equal(response.statusCode, 200);
          assert.equal(response.headers['ratelimit-limit'], undefined);
        }
        await tenant.transport.app.close();
      }
    });
  });
}

const url = process.env.TEST_DATABASE_URL;
describe('rate limit shared by instances on one PostgreSQL', {
  skip: url ? false : 'TEST_DATABASE_URL unset',
}, () => {
  /** An instance as a second server process has it: a pool of its own and an app of its own. */
  async function instance(limit: number) {
    const db = openPostgres({ connectionString: url!, poolSize: 4 });
    after(() => db.close());
    await migrate(db);
    const app = await buildApp({
      db,
      config: { ...testAuthConfig, rateLimitPerMinute: limit },
      logLevel: 'silent',
      rateLimitClock: stopped,
    });
    after(() => app.close());
    return { db, app };
  }

  test('two instances count one key together, also under concurrent requests', async () => {
    const limit = 10;
    const first = await instance(limit);
    const second = await instance(limit);
    const one = await ownedTenantApp(first.db, {}, { app: first.app });
    const two = await ownedTenantApp(second.db, {}, { app: second.app, tenant: one.tenant });
    // A count of an older window of the key, which the first claim prunes.
    await first.db.query('INSERT INTO rate_limits (key_id, window_no, hits) VALUES ($1, 1, 7)', [
      one.tenant.keyId,
    ]);
    // Sequential: the count runs on across the instances.
    for (let n = 1; n <= 4; n++) {
      const response = await get(n % 2 ? one : two);
      assert.equal(response.statusCode, 200);
      assertHeaders(response, limit, limit - n);
    }
    // Concurrent: 16 requests through both at once, 6 left in the window: exactly 6 pass.
    const answers = await Promise.all(Array.from({ length: 16 }, (_, n) => get(n % 2 ? one : two)));
    const statuses = answers.map((r) => r.statusCode);
    assert.equal(statuses.filter((s) => s === 200).length, 6, `statuses ${statuses}`);
    assert.equal(statuses.filter((s) => s === 429).length, 10, `statuses ${statuses}`);
    for (const r of answers.filter((a) => a.statusCode === 429)) assertTooMany(r, limit);
    const remaining = answers
      .filter((a) => a.statusCode === 200)
      .map((r) => Number(r.headers['ratelimit-remaining']));
    assert.deepEqual(
      remaining.sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5],
      'each passing request saw its own count',
    );
    // The 429s of an instance that saw the limit reached send no statement, so the table holds what
    // was claimed: one row of the current window (the older one put there first was pruned), at least
    // the limit.
    const rows = await first.db.query<{ hits: number; current: boolean }>(
      'SELECT hits, window_no = $2 AS current FROM rate_limits WHERE key_id = $1',
      [one.tenant.keyId, WINDOW_START / 60_000],
    );
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.ok(rows[0]!.current, 'the row of the current window');
    assert.ok(rows[0]!.hits >= limit, `hits ${rows[0]!.hits}`);
  });

  test("without a clock of its own the window is the database's; with one, a turned window starts again", async () => {
    const db = openPostgres({ connectionString: url!, poolSize: 2 });
    after(() => db.close());
    await migrate(db);
    const windowNow = async () =>
      (
        await db.query<{ n: string }>(
          'SELECT floor(extract(epoch FROM clock_timestamp()) / 60)::bigint::text AS n',
        )
      )[0]!.n;
    const keyId = randomUUID().replaceAll('-', '');
    const opened = await windowNow();
    assert.equal((await new LeasingRateLimitStore(db, 10, 60).hit(keyId)).hits, 1);
    const closed = await windowNow();
    const [row] = await db.query<{ n: string }>(
      'SELECT window_no::text AS n FROM rate_limits WHERE key_id = $1',
      [keyId],
    );
    // The window of the database's clock at the claim, whether or not a minute turned meanwhile.
    assert.ok(BigInt(opened) <= BigInt(row!.n) && BigInt(row!.n) <= BigInt(closed), `window ${row!.n}`);

    const moved = randomUUID().replaceAll('-', '');
    let now = WINDOW_START + 50_000;
    const store = new LeasingRateLimitStore(db, 10, 60, undefined, undefined, () => now);
    assert.deepEqual(await store.hit(moved), { hits: 1, resetSeconds: 10 });
    assert.deepEqual(await store.hit(moved), { hits: 2, resetSeconds: 10 });
    now += 15_000; // 5 s into the next window
    assert.deepEqual(await store.hit(moved), { hits: 1, resetSeconds: 55 });
    const rows = await db.query<{ n: string; hits: number }>(
      'SELECT window_no::text AS n, hits FROM rate_limits WHERE key_id = $1',
      [moved],
    );
    assert.deepEqual(rows, [{ n: String(WINDOW_START / 60_000 + 1), hits: 1 }], 'the older window pruned');
  });

  test('leases: one instance shows exact counts and sends one statement per block', async () => {
    const limit = 500;
    const size = leaseSize(limit);
    assert.equal(size, 5);
    const { db, app } = await instance(limit);
    const tenant = await ownedTenantApp(db, {}, { app });
    let claims = 0;
    const query = db.query;
    db.query = <Row>(text: string, params?: readonly unknown[]) => {
      if (text.includes('rate_limits')) claims++;
      return query<Row>(text, params);
    };
    const n = 12;
    for (let i = 1; i <= n; i++) {
      const response = await get(tenant);
      assert.equal(response.statusCode, 200);
      assertHeaders(response, limit, limit - i);
    }
    db.query = query;
    const blocks = Math.ceil(n / size);
    assert.equal(claims, blocks, 'one statement per block');
    const [row] = await db.query<{ hits: number }>('SELECT hits FROM rate_limits WHERE key_id = $1', [
      tenant.tenant.keyId,
    ]);
    assert.equal(row!.hits, blocks * size);
  });

  test('leases: two instances under concurrent requests admit at most the limit, at most size-1 fewer', async () => {
    const limit = 300;
    const size = leaseSize(limit);
    assert.equal(size, 3);
    const first = await instance(limit);
    const second = await instance(limit);
    const one = await ownedTenantApp(first.db, {}, { app: first.app });
    const two = await ownedTenantApp(second.db, {}, { app: second.app, tenant: one.tenant });
    const answers = await Promise.all(Array.from({ length: 400 }, (_, n) => get(n % 2 ? one : two)));
    const passed = answers.filter((a) => a.statusCode === 200).length;
    const refused = answers.filter((a) => a.statusCode === 429);
    assert.ok(passed <= limit && passed >= limit - (size - 1), `${passed} passed`);
    assert.equal(passed + refused.length, answers.length);
    for (const r of refused) assertTooMany(r, limit);
  });
});

describe('rate limit in memory (embedded PGlite)', () => {
  test('a window ends: the count starts again; Reset counts down to the end of the window', async () => {
    let now = 1_000_000 * 60_000 + 15_000; // 15 s into a window
    const store = new MemoryRateLimitStore(60, () => now);
    assert.deepEqual(await store.hit('sk_a'), { hits: 1, resetSeconds: 45 });
    assert.deepEqual(await store.hit('sk_a'), { hits: 2, resetSeconds: 45 });
    assert.deepEqual(await store.hit('sk_b'), { hits: 1, resetSeconds: 45 });
    now += 44_500;
    assert.deepEqual(await store.hit('sk_a'), { hits: 3, resetSeconds: 1 });
    now += 1_000; // the next window
    assert.deepEqual(await store.hit('sk_a'), { hits: 1, resetSeconds: 60 });
  });

  test('bounded: past maxKeys the least recently counted key is forgotten', async () => {
    const store = new MemoryRateLimitStore(60, () => 0, 2);
    await store.hit('k1');
    await store.hit('k2');
    await store.hit('k1');
    await store.hit('k3'); // k2 goes
    assert.equal((await store.hit('k1')).hits, 3);
    assert.equal((await store.hit('k2')).hits, 1);
  });
});

/** A database answering claims from `answer` (the total after the claim, and ms left), counting them. */
function fakeDb(answer: (params: readonly unknown[]) => Promise<{ total: number; left_ms: number }>) {
  const db = {
    claims: 0,
    async query<Row>(_text: string, params: readonly unknown[] = []): Promise<Row[]> {
      db.claims++;
      return [await answer(params)] as Row[];
    },
  } satisfies Pick<Queryable, 'query'> & { claims: number };
  return db;
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

describe('rate limit by quota leases (PostgreSQL store, fake database)', () => {
  test('lease size: 1% of the limit, from 1 to 100', () => {
    assert.deepEqual(
      [1, 10, 199, 200, 250, 1200, 10_000, 1_000_000].map(leaseSize),
      [1, 1, 1, 2, 2, 12, 100, 100],
    );
  });

  test('concurrent hits of a key share one claim; its block serves the next ones without a statement', async () => {
    const claim = deferred<{ total: number; left_ms: number }>();
    const db = fakeDb(() => claim.promise);
    const store = new LeasingRateLimitStore(db, 500, 60, () => 0);
    const waiting = Promise.all([store.hit('k'), store.hit('k'), store.hit('k')]);
    assert.equal(db.claims, 1);
    claim.resolve({ total: 5, left_ms: 30_000 });
    assert.deepEqual(
      (await waiting).map((c) => c.hits),
      [1, 2, 3],
    );
    assert.deepEqual(await store.hit('k'), { hits: 4, resetSeconds: 30 });
    assert.deepEqual(await store.hit('k'), { hits: 5, resetSeconds: 30 });
    assert.equal(db.claims, 1);
  });

  test('a burst under a block of 1: waiting hits are claimed together, two statements for four hits', async () => {
    const sizes: number[] = [];
    let total = 0;
    const db = fakeDb(async (params) => {
      await new Promise((done) => setImmediate(done));
      const size = params[2] as number;
      sizes.push(size);
      total += size;
      return { total, left_ms: 30_000 };
    });
    const store = new LeasingRateLimitStore(db, 10, 60, () => 0);
    const counts = await Promise.all([store.hit('k'), store.hit('k'), store.hit('k'), store.hit('k')]);
    assert.deepEqual(
      counts.map((c) => c.hits).sort((a, b) => a - b),
      [1, 2, 3, 4],
    );
    assert.deepEqual(sizes, [1, 3]);
  });

  test('the claim carries key, window and block size; a block past the limit grants the rest, then 429s alone', async () => {
    const seen: unknown[][] = [];
    const db = fakeDb(async (params) => {
      seen.push([...params]);
      return { total: 502, left_ms: 10_000 }; // 497 claimed before: 3 of the 5 are left
    });
    const store = new LeasingRateLimitStore(db, 500, 60, () => 0);
    const hits = [];
    for (let n = 0; n < 5; n++) hits.push((await store.hit('k')).hits);
    assert.deepEqual(hits, [498, 499, 500, 501, 501]);
    assert.deepEqual(seen, [['k', 60, 5, null]], "the database's clock tells the window");
  });

  test('a failed claim rejects every hit waiting on it and is not kept: the next hit claims again', async () => {
    let fail = true;
    const db = fakeDb(async () => {
      await new Promise((done) => setImmediate(done));
      if (fail) throw new Error('database down');
      return { total: 5, left_ms: 30_000 };
    });
    const store = new LeasingRateLimitStore(db, 500, 60, () => 0);
    const results = await Promise.allSettled([store.hit('k'), store.hit('k')]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(db.claims, 1);
    fail = false;
    assert.deepEqual(await store.hit('k'), { hits: 1, resetSeconds: 30 });
    assert.equal(db.claims, 2);
  });

  test('a database taking no writes: the key is counted by the instance up to the limit, the shared count tried again each second', async () => {
    let now = 0;
    let writable = false;
    const db = fakeDb(async () => {
      if (!writable) {
        throw Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), { code: '25006' });
      }
      return { total: 1, left_ms: 30_000 };
    });
    const store = new LeasingRateLimitStore(db, 3, 60, () => now);
    const hits = [];
    for (let n = 0; n < 4; n++) hits.push(await store.hit('k'));
    assert.deepEqual(hits, [
      { hits: 1, resetSeconds: 60 },
      { hits: 2, resetSeconds: 60 },
      { hits: 3, resetSeconds: 60 },
      { hits: 4, resetSeconds: 60 }, // past the limit: refused, as with the shared count
    ]);
    assert.equal(db.claims, 1, 'no statement for a second after the failed claim');
    now = 1_000;
    assert.deepEqual(await store.hit('k'), { hits: 5, resetSeconds: 59 });
    assert.equal(db.claims, 2, 'the shared count tried again');
    writable = true;
    now = 2_000;
    assert.deepEqual(await store.hit('k'), { hits: 1, resetSeconds: 30 }, 'the shared count again');
    assert.equal(db.claims, 3);
  });

  test('a window ends: its block and its exhaustion are dropped, a new block is claimed', async () => {
    let now = 0;
    let total = 0;
    const db = fakeDb(async () => {
      total += 1;
      return { total, left_ms: 1_500 - (now % 1_500) };
    });
    const store = new LeasingRateLimitStore(db, 2, 60, () => now);
    assert.deepEqual(await store.hit('k'), { hits: 1, resetSeconds: 2 });
    now = 600;
    assert.deepEqual(await store.hit('k'), { hits: 2, resetSeconds: 1 });
    assert.deepEqual(await store.hit('k'), { hits: 3, resetSeconds: 1 }); // exhausted: no statement
    assert.equal(db.claims, 2);
    now = 1_500; // the next window
    total = 0;
    assert.deepEqual(await store.hit('k'), { hits: 1, resetSeconds: 2 });
    assert.equal(db.claims, 3);
  });

  test('bounded: past maxKeys the least recently counted key is forgotten', async () => {
    let total = 0;
    const db = fakeDb(async () => ({ total: ++total * 5, left_ms: 30_000 }));
    const store = new LeasingRateLimitStore(db, 500, 60, () => 0, 2);
    await store.hit('k1');
    await store.hit('k2');
    await store.hit('k1');
    await store.hit('k3'); // k2 goes, and its block with it
    assert.equal(db.claims, 3);
    await store.hit('k1');
    assert.equal(db.claims, 3);
    await store.hit('k2');
    assert.equal(db.claims, 4);
  });
});

test('RATE_LIMIT_PER_MINUTE: default 1200, 0 turns it off, anything else refused', () => {
  assert.equal(loadConfig({}).rateLimitPerMinute, 1200);
  assert.equal(loadConfig({ RATE_LIMIT_PER_MINUTE: '0' }).rateLimitPerMinute, 0);
  assert.equal(loadConfig({ RATE_LIMIT_PER_MINUTE: '50' }).rateLimitPerMinute, 50);
  for (const bad of ['-1', 'many', '1.5', '1000001']) {
    assert.throws(() => loadConfig({ RATE_LIMIT_PER_MINUTE: bad }), ConfigError);
  }
});
