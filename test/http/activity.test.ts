import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACTIVITY_DAYS } from '../../src/idempotency/expiry-sweep.js';
import { parseNetworks } from '../../src/webhooks/addresses.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer } from '../helpers/read-data.js';

/*
 * GET /v1/activity (extensions.md 14): every write request of an authenticated tenant, recorded in
 * the request's own transaction where it writes, never its body or a secret, newest first, filtered,
 * paged, removed after 7 days by the expiry sweep.
 */

const loopback = { webhookAllowedNetworks: parseNetworks('127.0.0.0/8') };

for (const backend of backends()) {
  describe(`GET /v1/activity on ${backend.name}`, () => {
    test('records writes with their counts, refusals with their first problems, replays; never reads or bodies', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db, loopback);
      const written = await a.post('/api/customers/batch-create?outcomes=true', [
        customer('ACT-1', { name: 'Secret Name Of A Customer' }),
        customer('ACT-2'),
        customer('ACT-1'),
      ]);
      assert.equal(written.status, 201, written.text);
      // Seven invalid items: the row keeps the first five problems the answer gave.
      const refused = await a.post(
        '/api/customers/batch-create',
        Array.from({ length: 7 }, (_, n) => customer(`BAD-${n}`, { name: '' })),
      );
      assert.equal(refused.status, 400);
      const keyed = { 'idempotency-key': 'activity-key-1' };
      const first = await a.post('/api/customers/batch-create', [customer('ACT-3')], keyed);
      const again = await a.post('/api/customers/batch-create', [customer('ACT-3')], keyed);
      assert.equal(first.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const endpoint = await a.post('/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        resources: ['customers'],
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      const secret = endpoint.body.secret as string;
      const missing = await a.send({ method: 'DELETE', path: '/v1/webhooks/nope' });
      assert.equal(missing.status, 404);
      await a.get('/v1/customers');

      const page = await a.get('/v1/activity');
      assert.equal(page.status, 200, page.text);
      const rows = page.body.data as Record<string, any>[];
      assert.deepEqual(
        rows.map((row) => [row.method, row.path, row.status, row.replayed]),
        [
          ['DELETE', '/v1/webhooks/nope', 404, false],
          ['POST', '/v1/webhooks', 201, false],
          ['POST', '/api/customers/batch-create', 201, true],
          ['POST', '/api/customers/batch-create', 201, false],
          ['POST', '/api/customers/batch-create', 400, false],
          ['POST', '/api/customers/batch-create', 201, false],
        ],
      );
      assert.equal(page.body.links.next, null);
      const [deleted, created, replay, keyedRow, refusedRow, batch] = rows;
      assert.deepEqual(
        { items: batch!.items, created: batch!.created, updated: batch!.updated, ignored: batch!.ignored },
        { items: 3, created: 2, updated: 0, ignored: 1 },
      );
      assert.equal(batch!.resource, 'customers');
      assert.equal(batch!.idempotency_key, null);
      assert.equal(batch!.request_id, written.headers['x-request-id']);
      assert.equal(refusedRow!.problems.length, 5);
      assert.deepEqual(refusedRow!.problems, refused.body.errors.slice(0, 5));
      assert.equal(refusedRow!.created, null);
      assert.equal(keyedRow!.idempotency_key, 'activity-key-1');
      assert.equal(replay!.idempotency_key, 'activity-key-1');
      assert.equal(created!.resource, 'webhooks');
      assert.equal(deleted!.problems.length, 1);
      for (const row of rows) {
        assert.match(row.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
        assert.ok(Number.isInteger(row.duration_ms) && row.duration_ms >= 0);
      }
      // Neither the bodies (a customer's name, the endpoint's URL) nor the secret, nor the query string.
      const stored = JSON.stringify(
        await db.query('SELECT * FROM activity WHERE tenant_id = $1', [a.tenant.tenantId]),
      );
      for (const text of [
        'Secret Name Of A Customer',
        secret,
        '127.0.0.1:9',
        'outcomes=true',
        a.accessToken,
      ]) {
        assert.ok(!stored.includes(text), `the activity holds ${text}`);
      }
    });

    test('a write and its row commit in one transaction', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      for (const key of [undefined, 'same-transaction']) {
        const code = key ? 'TX-KEYED' : 'TX-PLAIN';
        const answer = await a.post(
          '/api/customers/batch-create',
          [customer(code)],
          key ? { 'idempotency-key': key } : {},
        );
        assert.equal(answer.status, 201);
        const [row] = await db.query<{ same: boolean }>(
          `SELECT (SELECT xmin::text FROM customers WHERE tenant_id = $1 AND code = $2) =
                  (SELECT xmin::text FROM activity WHERE tenant_id = $1 AND request_id = $3) AS same`,
          [a.tenant.tenantId, code, answer.headers['x-request-id']],
        );
        assert.equal(row!.same, true, `${code}: the customer and its activity row in one transaction`);
      }
    });

    test('answers that say to come back, and unauthenticated requests, are not recorded', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db, { rateLimitPerMinute: 3 });
      const answers = [];
      for (let n = 0; n < 5; n++)
        answers.push((await a.post('/api/customers/batch-create', [customer(`RL-${n}`)])).status);
      assert.ok(answers.includes(429), `statuses ${answers}`);
      const anonymous = await a.transport.send({
        method: 'POST',
        path: '/api/customers/batch-create',
        headers: { 'content-type': 'application/json' },
        body: '[]',
      });
      assert.equal(anonymous.status, 401);
      const [row] = await db.query<{ n: number; limited: number }>(
        'SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 429)::int AS limited FROM activity WHERE tenant_id = $1',
        [a.tenant.tenantId],
      );
      assert.equal(row!.limited, 0);
      assert.equal(row!.n, answers.filter((status) => status !== 429).length);
    });

    test('filters, pages newest first, refuses bad parameters, and shows a tenant only its own', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      for (let n = 0; n < 5; n++) await a.post('/api/customers/batch-create', [customer(`P-${n}`)]);
      for (let n = 0; n < 3; n++) await a.post('/api/customers/batch-create', [{ code: `P-BAD-${n}` }]);
      await a.post('/api/products/batch-create', [{ code: 'X1', description: 'x' }]);
      await b.post('/api/customers/batch-create', [customer('B-1')]);

      const seen: any[] = [];
      let next: string | null = '/v1/activity?limit=4';
      while (next) {
        const answer = await a.get(next.replace(/^https?:\/\/[^/]+/, ''));
        assert.equal(answer.status, 200, answer.text);
        assert.ok(answer.body.data.length <= 4);
        seen.push(...answer.body.data);
        next = answer.body.links.next;
      }
      assert.equal(seen.length, 9);
      assert.deepEqual(
        seen.map((row) => row.resource),
        ['products', ...Array(8).fill('customers')],
      );
      const ids = seen.map((row) => row.request_id);
      assert.equal(new Set(ids).size, 9);

      const failed = await a.get('/v1/activity?outcome=failed');
      assert.deepEqual(
        failed.body.data.map((row: any) => row.status),
        [400, 400, 400],
      );
      const succeeded = await a.get('/v1/activity?outcome=succeeded&resource=customers&limit=2');
      assert.deepEqual(
        succeeded.body.data.map((row: any) => [row.status, row.resource]),
        [
          [201, 'customers'],
          [201, 'customers'],
        ],
      );
      assert.match(
        succeeded.body.links.next,
        /\/v1\/activity\?limit=2&outcome=succeeded&resource=customers&before=\d+$/,
      );
      const second = await a.get(succeeded.body.links.next.replace(/^https?:\/\/[^/]+/, ''));
      const third = await a.get(second.body.links.next.replace(/^https?:\/\/[^/]+/, ''));
      assert.deepEqual([second.body.data.length, third.body.data.length], [2, 1]);
      assert.equal(third.body.links.next, null);
      const products = await a.get('/v1/activity?resource=products');
      assert.equal(products.body.data.length, 1);

      const theirs = await b.get('/v1/activity');
      assert.deepEqual(
        theirs.body.data.map((row: any) => row.resource),
        ['customers'],
      );

      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['outcome=maybe', 'outcome'],
        ['resource=nothing', 'resource'],
        ['before=abc', 'before'],
        ['before=0', 'before'],
        ['colour=red', 'colour'],
      ] as const) {
        const answer = await a.get(`/v1/activity?${query}`);
        assert.equal(answer.status, 400, query);
        assert.equal(answer.body.statusCode, 400);
        assert.equal(answer.body.errors[0].field, field, query);
      }
      const anonymous = await a.transport.send({ path: '/v1/activity' });
      assert.equal(anonymous.status, 401);
    });

    test('the expiry sweep removes requests older than 7 days and keeps the rest', async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      for (let n = 0; n < 3; n++) await a.post('/api/customers/batch-create', [customer(`OLD-${n}`)]);
      await db.query(
        `UPDATE activity SET at = now() - make_interval(days => $2, mins => 1)
         WHERE tenant_id = $1 AND id IN (SELECT id FROM activity WHERE tenant_id = $1 ORDER BY id LIMIT 2)`,
        [a.tenant.tenantId, ACTIVITY_DAYS],
      );
      await db.query("DELETE FROM leases WHERE name = 'idempotency-expiry'");
      await a.transport.app.background.runRound('idempotency-expiry');
      const page = await a.get('/v1/activity');
      assert.equal(page.body.data.length, 1);
    });
  });
}
