import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { Database } from '../../src/db/database.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { at, DELIVERY_FIELDS, delivery, item } from '../helpers/read-data.js';

/*
 * Deliveries the ERP cannot take (extensions.md 13): reject with a reason, the rejected list,
 * requeue, acknowledge clearing a rejection, each step a change in the feed; the acknowledgement's
 * array rules, Idempotency-Key and large-body handling; tenants apart.
 */

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

async function load(tenant: TenantClient, codes: string[]) {
  const items = codes.map((code, n) => delivery(code, { reported_at: at(1 + (n % 28)), items: [item(1)] }));
  const response = await tenant.post('/api/deliveries/batch-create', items);
  assert.equal(response.status, 201, JSON.stringify(response.body));
}

const codesOf = (page: { data: { code: string }[] }) => page.data.map((d) => d.code);

async function list(tenant: TenantClient, path: string) {
  const response = await tenant.get(path);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

/** Every delivery record of the feed after `after` (the last one of each delivery: its state now). */
async function feedDeliveries(db: Database, tenant: TenantClient, after?: string) {
  await feedCaughtUp(db);
  const records: any[] = [];
  let cursor = after;
  for (;;) {
    const query = `resource=deliveries&limit=1000${cursor ? `&after=${cursor}` : ''}`;
    const response = await tenant.get(`/v1/changes?${query}`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    records.push(...response.body.data);
    cursor = response.body.next;
    if (!response.body.hasMore) return { records, next: cursor! };
  }
}

for (const backend of backends()) {
  describe(`rejected deliveries on ${backend.name}`, () => {
    test('a rejection leaves the pending list for the rejected one, with its date and reason', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, ['D1', 'D2', 'D3', 'D4']);
      const acked = await tenant.post('/v1/deliveries/acknowledge', ['D4']);
      assert.equal(acked.status, 200);

      const response = await tenant.post('/v1/deliveries/reject', [
        { code: 'D1', reason: 'unknown customer C1 in the ERP' },
        { code: 'D2', reason: 'first reason' },
        { code: 'NOPE', reason: 'no such delivery' },
        { code: 'D4', reason: 'acknowledged already' },
        { code: 'D2', reason: 'period 2026-01 closed' },
      ]);
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(response.body, {
        statusCode: 200,
        message: 'Deliveries rejected',
        rejected: 2,
        notFound: ['D4', 'NOPE'],
      });

      const pending = await list(tenant, '/v1/deliveries/pending');
      assert.deepEqual(codesOf(pending), ['D3']);
      assert.equal(pending.meta.totalItems, 1);
      const rejected = await list(tenant, '/v1/deliveries/rejected');
      assert.deepEqual(codesOf(rejected).sort(), ['D1', 'D2']);
      assert.equal(rejected.meta.totalItems, 2);
      for (const d of rejected.data) {
        assert.deepEqual(Object.keys(d), [...DELIVERY_FIELDS, 'rejected_at', 'rejection_reason']);
        assert.match(d.rejected_at, DATE_TIME);
        assert.equal(d.items.length, 1);
      }
      const byCode = Object.fromEntries(rejected.data.map((d: any) => [d.code, d.rejection_reason]));
      // A code given twice takes its last reason.
      assert.deepEqual(byCode, { D1: 'unknown customer C1 in the ERP', D2: 'period 2026-01 closed' });
    });

    test('rejecting again replaces the reason and makes it the newest rejection', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await load(tenant, ['R1', 'R2']);
      await tenant.post('/v1/deliveries/reject', [{ code: 'R1', reason: 'one' }]);
      await tenant.post('/v1/deliveries/reject', [{ code: 'R2', reason: 'two' }]);
      // Rejections within one second share a date; the code breaks the tie, newest (largest) first.
      await db.query(
        "UPDATE deliveries SET rejected_at = rejected_at - interval '1 minute' WHERE code IN ('R1', 'R2') AND tenant_id = $1",
        [tenant.tenant.tenantId],
      );
      const again = await tenant.post('/v1/deliveries/reject', [{ code: 'R1', reason: 'one, again' }]);
      assert.deepEqual(again.body, {
        statusCode: 200,
        message: 'Deliveries rejected',
        rejected: 1,
        notFound: [],
      });
      const rejected = await list(tenant, '/v1/deliveries/rejected');
      assert.deepEqual(codesOf(rejected), ['R1', 'R2']);
      assert.equal(rejected.data[0].rejection_reason, 'one, again');
      const oldest = await list(tenant, '/v1/deliveries/rejected?sort=rejected_at');
      assert.deepEqual(codesOf(oldest), ['R2', 'R1']);
      // The pending list's sort is taken too: by reported date (R1 reported on day 1, R2 on day 2).
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/rejected?sort=-reported_at')), [
        'R2',
        'R1',
      ]);
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/rejected?sort=reported_at')), ['R1', 'R2']);
      const wrong = await tenant.get('/v1/deliveries/rejected?sort=created_at');
      assert.equal(wrong.status, 400);
    });

    test('requeue puts rejected deliveries back in the pending list; other codes are notFound', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, ['Q1', 'Q2', 'Q3', 'Q4']);
      await tenant.post('/v1/deliveries/reject', [
        { code: 'Q1', reason: 'r' },
        { code: 'Q2', reason: 'r' },
      ]);
      await tenant.post('/v1/deliveries/acknowledge', ['Q4']);
      const response = await tenant.post('/v1/deliveries/requeue', ['Q1', 'Q3', 'Q4', 'NOPE', 'Q1']);
      assert.deepEqual(response.body, {
        statusCode: 200,
        message: 'Deliveries requeued',
        requeued: 1,
        notFound: ['NOPE', 'Q3', 'Q4'],
      });
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/rejected')), ['Q2']);
      const pending = await list(tenant, '/v1/deliveries/pending');
      assert.deepEqual(codesOf(pending).sort(), ['Q1', 'Q3']);
      assert.deepEqual(Object.keys(pending.data[0]), DELIVERY_FIELDS);
      assert.equal(pending.meta.totalItems, 2);
    });

    test('acknowledging a rejected delivery acknowledges it and clears the rejection', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await load(tenant, ['A1', 'A2']);
      const start = await feedDeliveries(db, tenant);
      await tenant.post('/v1/deliveries/reject', [{ code: 'A1', reason: 'closed period' }]);
      const rejected = await feedDeliveries(db, tenant, start.next);
      assert.deepEqual(
        rejected.records.map((d) => [d.code, d.rejection_reason, d.acknowledged_at]),
        [['A1', 'closed period', null]],
      );
      assert.match(rejected.records[0].rejected_at, DATE_TIME);

      const ack = await tenant.post('/v1/deliveries/acknowledge', ['A1']);
      assert.deepEqual(ack.body, {
        statusCode: 200,
        message: 'Deliveries acknowledged',
        acknowledged: 1,
        notFound: [],
      });
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/rejected')), []);
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/pending')), ['A2']);
      const acknowledged = await feedDeliveries(db, tenant, rejected.next);
      assert.equal(acknowledged.records.length, 1);
      const [a1] = acknowledged.records;
      assert.equal(a1.code, 'A1');
      assert.match(a1.acknowledged_at, DATE_TIME);
      assert.equal(a1.rejected_at, null);
      assert.equal(a1.rejection_reason, null);
      // An acknowledged delivery can be neither rejected nor requeued.
      const late = await tenant.post('/v1/deliveries/reject', [{ code: 'A1', reason: 'too late' }]);
      assert.deepEqual(late.body.notFound, ['A1']);
      assert.deepEqual((await tenant.post('/v1/deliveries/requeue', ['A1'])).body.notFound, ['A1']);
    });

    test('a requeue is a change in the feed: the delivery shows no rejection again', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await load(tenant, ['F1']);
      await tenant.post('/v1/deliveries/reject', [{ code: 'F1', reason: 'r' }]);
      const rejected = await feedDeliveries(db, tenant);
      assert.equal(rejected.records.at(-1).rejection_reason, 'r');
      await tenant.post('/v1/deliveries/requeue', ['F1']);
      const requeued = await feedDeliveries(db, tenant, rejected.next);
      assert.deepEqual(
        requeued.records.map((d) => [d.code, d.rejected_at, d.rejection_reason, d.acknowledged_at]),
        [['F1', null, null, null]],
      );
    });

    test("another tenant's codes are notFound, and its deliveries untouched", async () => {
      const db = await backend.db();
      const mine = await appForNewTenant(db);
      const theirs = await appForNewTenant(db);
      await load(theirs, ['T1']);
      await theirs.post('/v1/deliveries/reject', [{ code: 'T1', reason: 'theirs' }]);
      await load(mine, ['M1']);
      const reject = await mine.post('/v1/deliveries/reject', [{ code: 'T1', reason: 'mine' }]);
      assert.deepEqual(reject.body.notFound, ['T1']);
      const requeue = await mine.post('/v1/deliveries/requeue', ['T1']);
      assert.deepEqual(requeue.body.notFound, ['T1']);
      assert.deepEqual(codesOf(await list(mine, '/v1/deliveries/rejected')), []);
      const kept = await list(theirs, '/v1/deliveries/rejected');
      assert.deepEqual(
        kept.data.map((d: any) => [d.code, d.rejection_reason]),
        [['T1', 'theirs']],
      );
    });

    test('the reason is user text: any Unicode the service accepts, kept exactly, never interpreted', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const reasons = [
        'cliente desconocido: «Ñandú & Cía» 🚚',
        "<script>alert(1)</script> ' OR 1=1 -- %s \\u0041 $1",
        'עברית وعربي 中文 \u200b zero-width',
        'x'.repeat(500),
        '😀'.repeat(500),
      ];
      const codes = reasons.map((_, n) => `U${n}`);
      await load(tenant, codes);
      const response = await tenant.post(
        '/v1/deliveries/reject',
        codes.map((code, n) => ({ code, reason: reasons[n] })),
      );
      assert.equal(response.body.rejected, reasons.length);
      const rejected = await list(tenant, '/v1/deliveries/rejected?limit=500');
      const byCode = Object.fromEntries(rejected.data.map((d: any) => [d.code, d.rejection_reason]));
      assert.deepEqual(
        codes.map((code) => byCode[code]),
        reasons,
      );
    });

    test('the array rules (1 to 1,000 elements) and every element checked; a refused body changes nothing', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, ['V1']);
      const post = (body: unknown) => tenant.post('/v1/deliveries/reject', body);
      const arrayMessage = async (body: unknown) => {
        const response = await post(body);
        assert.equal(response.status, 400);
        return response.body.errors;
      };
      assert.deepEqual(await arrayMessage('{"code":'), [{ message: 'Invalid JSON in request body' }]);
      assert.deepEqual(await arrayMessage({ code: 'V1', reason: 'r' }), [
        { index: null, field: null, message: 'Request body must be an array' },
      ]);
      assert.deepEqual(await arrayMessage([]), [
        { index: null, field: null, message: 'Request body cannot be empty' },
      ]);
      const tooMany = Array.from({ length: 1001 }, (_, n) => ({ code: `X${n}`, reason: 'r' }));
      assert.deepEqual(await arrayMessage(tooMany), [
        { index: null, field: null, message: 'Array exceeds maximum limit of 1000 items' },
      ]);
      const invalid = await post([
        { code: 'V1', reason: 'fine' },
        { code: 'V1' },
        { code: 'V1', reason: 'x'.repeat(501) },
        { code: 'x'.repeat(31), reason: '   ' },
        'V1',
        { code: 'V1', reason: 'r', extra: 1 },
      ]);
      assert.equal(invalid.status, 400);
      assert.deepEqual(
        invalid.body.errors.map((e: any) => [e.index, e.errors.map((f: any) => f.field)]),
        [
          [1, ['reason']],
          [2, ['reason']],
          [3, ['code', 'reason']],
          [4, [null]],
          [5, ['extra']],
        ],
      );
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/pending')), ['V1']);
      // The requeue takes the acknowledgement's body: 10,000 codes at most, each a delivery code.
      const requeue = await tenant.post(
        '/v1/deliveries/requeue',
        Array.from({ length: 10_001 }, () => 'V1'),
      );
      assert.deepEqual(requeue.body.errors, [
        { index: null, field: null, message: 'Array exceeds maximum limit of 10000 items' },
      ]);
      const notCodes = await tenant.post('/v1/deliveries/requeue', ['V1', 7]);
      assert.deepEqual(
        notCodes.body.errors.map((e: any) => e.index),
        [1],
      );
    });

    test('a large rejection body (checked in the worker thread) gets the same answer as a small one', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const codes = Array.from({ length: 1000 }, (_, n) => `L${String(n).padStart(4, '0')}`);
      await load(tenant, codes);
      const body = codes.map((code) => ({ code, reason: `ERP refused ${code}: ${'é'.repeat(300)}` }));
      assert.ok(Buffer.byteLength(JSON.stringify(body)) > 256 * 1024, 'past the worker threshold');
      const response = await tenant.post('/v1/deliveries/reject', body);
      assert.deepEqual(response.body, {
        statusCode: 200,
        message: 'Deliveries rejected',
        rejected: 1000,
        notFound: [],
      });
      const bad = body.map((entry, n) => (n === 999 ? { code: entry.code } : entry));
      const refused = await tenant.post('/v1/deliveries/reject', bad);
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.errors, [
        { index: 999, errors: [{ field: 'reason', message: 'Field is required' }] },
      ]);
      const rejected = await list(tenant, '/v1/deliveries/rejected?limit=1');
      assert.equal(rejected.meta.totalItems, 1000);
    });

    test('an Idempotency-Key: the rejection runs once, a retry replays its answer', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await load(tenant, ['K1']);
      const headers = { 'idempotency-key': 'reject-K1-once' };
      const body = [{ code: 'K1', reason: 'first' }];
      const first = await tenant.post('/v1/deliveries/reject', body, headers);
      assert.equal(first.body.rejected, 1);
      await tenant.post('/v1/deliveries/requeue', ['K1']);
      const retry = await tenant.post('/v1/deliveries/reject', body, headers);
      assert.deepEqual(retry.body, first.body);
      assert.deepEqual(
        codesOf(await list(tenant, '/v1/deliveries/rejected')),
        [],
        'the retry did not reject again',
      );
      const reused = await tenant.post('/v1/deliveries/reject', [{ code: 'K1', reason: 'other' }], headers);
      assert.equal(reused.status, 422);
    });

    test('a rejection and an acknowledgement of one delivery, racing: one state, which the feed shows', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const codes = Array.from({ length: 12 }, (_, n) => `RACE${n}`);
      await load(tenant, codes);
      const start = await feedDeliveries(db, tenant);
      const answers = await Promise.all(
        codes.map(async (code, n) => {
          const reject = () => tenant.post('/v1/deliveries/reject', [{ code, reason: 'race' }]);
          const acknowledge = () => tenant.post('/v1/deliveries/acknowledge', [code]);
          // Half the rounds send the rejection first, half the acknowledgement.
          const [r, a] =
            n % 2 === 0
              ? await Promise.all([reject(), acknowledge()])
              : (await Promise.all([acknowledge(), reject()])).reverse();
          assert.equal(r!.status, 200);
          assert.equal(a!.status, 200);
          return { code, rejected: r!.body.rejected as number, acknowledged: a!.body.acknowledged as number };
        }),
      );
      // The acknowledgement always wins in the end: it takes a rejected delivery too.
      for (const answer of answers) assert.equal(answer.acknowledged, 1, JSON.stringify(answer));
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/rejected')), []);
      assert.deepEqual(codesOf(await list(tenant, '/v1/deliveries/pending')), []);
      const rows = await db.query<{
        code: string;
        acknowledged: boolean;
        rejected_at: string | null;
        reason: string | null;
      }>(
        `SELECT code, acknowledged_at IS NOT NULL AS acknowledged, rejected_at::text, rejection_reason AS reason
         FROM deliveries WHERE tenant_id = $1 ORDER BY code`,
        [tenant.tenant.tenantId],
      );
      for (const row of rows)
        assert.deepEqual([row.acknowledged, row.rejected_at, row.reason], [true, null, null]);
      const feed = await feedDeliveries(db, tenant, start.next);
      const last = new Map(feed.records.map((d) => [d.code, d]));
      assert.equal(last.size, codes.length);
      for (const d of last.values()) {
        assert.match(d.acknowledged_at, DATE_TIME);
        assert.equal(d.rejected_at, null);
        assert.equal(d.rejection_reason, null);
      }
    });
  });
}
