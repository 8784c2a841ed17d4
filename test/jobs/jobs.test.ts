import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { batchResources } from '../../src/resources/index.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { validItem } from '../helpers/batch-items.js';
import { csv, postEmpty, putPart, resultsOf, runJobs, submitJob } from '../helpers/jobs.js';

/*
 * Bulk jobs (extensions.md 12) end to end through the API: a CSV in two parts written, its results in
 * line order, reject and skip, repeated keys over the whole file, NDJSON, the job's states and
 * refusals, and another tenant's job never seen.
 */

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
const PRICE_HEADER = ['product_code', 'price_list', 'price'];

for (const backend of backends()) {
  describe(`bulk jobs on ${backend.name}`, () => {
    let db: Database;
    let tenant: TenantClient<NewTenant, InjectTransport>;
    const app = () => tenant.transport.app;

    before(async () => {
      db = await backend.db();
      tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1', 'P2', 'P3']);
    });
    after(() => tenant.transport.app.close());

    test('a CSV in two parts: created 201, parts 200, complete 202, then written with its results', async () => {
      const created = await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' });
      assert.equal(created.status, 201, created.text);
      const job = created.body;
      assert.match(job.id, /^job_[0-9a-f]{24}$/);
      assert.deepEqual(
        { ...job, id: undefined, created_at: undefined },
        {
          id: undefined,
          resource: 'prices',
          format: 'csv',
          on_invalid: 'reject',
          delimiter: ',',
          state: 'open',
          error: null,
          rows: { received: 0, invalid: 0, created: 0, updated: 0, ignored: 0 },
          parts: { count: 0, bytes: 0 },
          created_at: undefined,
          completed_at: null,
          finished_at: null,
        },
      );
      assert.match(job.created_at, DATE_TIME);
      const text = csv(PRICE_HEADER, [
        ['P1', 'L1', '1.50'],
        ['P2', 'L1', '2'],
        ['P3', 'L1', '3.25'],
      ]);
      // The header opens part 1; part 2 goes on where part 1 stopped, mid-row.
      const cut = text.indexOf('P2') + 1;
      const one = await putPart(tenant, job.id, 1, text.slice(0, cut));
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(one.body, { part: 1, bytes: cut });
      assert.equal((await putPart(tenant, job.id, 2, text.slice(cut))).status, 200);
      const completed = await postEmpty(tenant, `/v1/jobs/${job.id}/complete`);
      assert.equal(completed.status, 202, completed.text);
      assert.equal(completed.body.state, 'queued');
      assert.deepEqual(completed.body.parts, { count: 2, bytes: Buffer.byteLength(text) });
      assert.match(completed.body.completed_at, DATE_TIME);

      await runJobs(app());
      const done = await tenant.get(`/v1/jobs/${job.id}`);
      assert.equal(done.body.state, 'succeeded', done.text);
      assert.deepEqual(done.body.rows, { received: 3, invalid: 0, created: 3, updated: 0, ignored: 0 });
      assert.match(done.body.finished_at, DATE_TIME);
      assert.deepEqual(await resultsOf(tenant, job.id, 'created'), [
        { line: 2, key: { product_code: 'P1', price_list: 'L1' } },
        { line: 3, key: { product_code: 'P2', price_list: 'L1' } },
        { line: 4, key: { product_code: 'P3', price_list: 'L1' } },
      ]);
      assert.deepEqual(await resultsOf(tenant, job.id, 'failed'), []);
      const rows = await db.query<{ product_code: string; price: string }>(
        'SELECT product_code, price::text AS price FROM prices WHERE tenant_id = $1 ORDER BY product_code',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(
        rows.map((row) => [row.product_code, row.price]),
        [
          ['P1', '1.50'],
          ['P2', '2.00'],
          ['P3', '3.25'],
        ],
      );
      // The parts' bytes go once the job has finished; their count and size stay on the job.
      const stored = await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [job.id]);
      assert.equal(stored.length, 0);
    });

    test('reject: one invalid row fails the job, nothing written, every invalid row listed with the batch messages', async () => {
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [
        csv(PRICE_HEADER, [
          ['P1', 'R1', '1'],
          ['P1', 'R1', 'abc'],
          ['NOPE', 'R1', '1'],
          ['P2', '', '2'],
        ]),
      ]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'failed');
      assert.match(job.error, /^3 of 4 rows are invalid/);
      assert.deepEqual(job.rows, { received: 4, invalid: 3, created: 0, updated: 0, ignored: 0 });
      // The same problem sent as a batch gets the same messages.
      const batch = await tenant.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'R1', price: 'abc' },
        { product_code: 'NOPE', price_list: 'R1', price: '1' },
        { product_code: 'P2', price_list: '', price: '2' },
      ]);
      assert.equal(batch.status, 400);
      const failed = await resultsOf(tenant, id, 'failed');
      assert.deepEqual(
        failed,
        batch.body.errors.map((error: { index: number; errors: unknown[] }, at: number) => ({
          line: at + 3,
          key: [
            { product_code: 'P1', price_list: 'R1' },
            { product_code: 'NOPE', price_list: 'R1' },
            { product_code: 'P2' },
          ][at],
          errors: error.errors,
        })),
      );
      const written = await db.query(`SELECT 1 FROM prices WHERE tenant_id = $1 AND price_list = 'R1'`, [
        tenant.tenant.tenantId,
      ]);
      assert.equal(written.length, 0);
    });

    test('skip: the valid rows written, the invalid ones counted and listed', async () => {
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [
        csv(PRICE_HEADER, [
          ['P1', 'S1', '1'],
          ['P1', 'S1', 'abc'],
          ['NOPE', 'S1', '1'],
          ['P2', 'S1', '2'],
        ]),
      ]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 4, invalid: 2, created: 2, updated: 0, ignored: 0 });
      assert.deepEqual(
        (await resultsOf(tenant, id, 'failed')).map((row) => row.line),
        [3, 4],
      );
      assert.deepEqual(
        (await resultsOf(tenant, id, 'created')).map((row) => row.line),
        [2, 5],
      );
    });

    test('references over many blocks: a product found once is found again, one never found is refused in every block', async () => {
      // 25,000 rows: blocks of 128 KiB of text (src/jobs/file-blocks.ts) make three of them or more.
      const rows: string[][] = [];
      const nope: number[] = [];
      for (let n = 0; n < 25_000; n++) {
        const unknown = n === 0 || n === 12_345 || n === 24_999;
        const product = n === 24_999 ? 'NOPE2' : unknown ? 'NOPE1' : `P${1 + (n % 3)}`;
        if (unknown) nope.push(n + 2);
        rows.push([product, `REF${n}`, '1']);
      }
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [
        csv(PRICE_HEADER, rows),
      ]);
      await runJobs(app());
      // A row invalid by its price that names a missing product too: both problems, its own first.
      rows.push(['NOPE1', 'REFLAST', 'x']);
      const id2 = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [
        csv(PRICE_HEADER, rows.slice(-2)),
      ]);
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 25_000, invalid: 3, created: 24_997, updated: 0, ignored: 0 });
      const failed = await resultsOf(tenant, id, 'failed');
      assert.deepEqual(
        failed.map((row) => [row.line, row.errors]),
        nope.map((line) => [
          line,
          [{ field: 'product_code', message: 'Product does not exist in the product master' }],
        ]),
      );
      await runJobs(app());
      const both = await resultsOf(tenant, id2, 'failed');
      assert.deepEqual(
        both.map((row) => [row.line, (row.errors as { field: string }[]).map((error) => error.field)]),
        [
          [2, ['product_code']],
          [3, ['price', 'product_code']],
        ],
      );
    });

    test('repeated keys over the whole file: the last occurrence of an upsert wins, the others are ignored', async () => {
      // 12,000 rows: more than one transaction of the writing, with a key at both ends.
      const rows: string[][] = [['P1', 'BIG', '1.00']];
      for (let n = 1; n < 11_999; n++) rows.push(['P2', `B${n}`, `${n}`]);
      rows.push(['P1', 'BIG', '9.99']);
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [csv(PRICE_HEADER, rows)]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 12_000, invalid: 0, created: 11_999, updated: 0, ignored: 1 });
      assert.deepEqual(await resultsOf(tenant, id, 'ignored'), [
        { line: 2, key: { product_code: 'P1', price_list: 'BIG' } },
      ]);
      const created = await resultsOf(tenant, id, 'created');
      assert.equal(created.length, 11_999);
      assert.deepEqual(created.at(-1), { line: 12_001, key: { product_code: 'P1', price_list: 'BIG' } });
      assert.ok(created.every((row, at) => at === 0 || row.line > created[at - 1]!.line));
      const [price] = await db.query<{ price: string }>(
        `SELECT price::text AS price FROM prices WHERE tenant_id = $1 AND product_code = 'P1' AND price_list = 'BIG'`,
        [tenant.tenant.tenantId],
      );
      assert.equal(price!.price, '9.99');

      // The same file again with two new keys amid the first block: the keys that exist now updated,
      // the new ones created (a block of both kinds), the replaced occurrence still ignored.
      const mixed = [
        ...rows.slice(0, 5_000),
        ['P2', 'NEW-1', '1'],
        ['P2', 'NEW-2', '2'],
        ...rows.slice(5_000),
      ];
      const again = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [
        csv(PRICE_HEADER, mixed),
      ]);
      await runJobs(app());
      assert.deepEqual((await tenant.get(`/v1/jobs/${again}`)).body.rows, {
        received: 12_002,
        invalid: 0,
        created: 2,
        updated: 11_999,
        ignored: 1,
      });
      assert.deepEqual(await resultsOf(tenant, again, 'created'), [
        { line: 5_002, key: { product_code: 'P2', price_list: 'NEW-1' } },
        { line: 5_003, key: { product_code: 'P2', price_list: 'NEW-2' } },
      ]);
      assert.equal((await resultsOf(tenant, again, 'updated')).length, 11_999);
    });

    test('insert-if-absent over the whole file: the first occurrence wins', async () => {
      const rows = [
        ['P1', 'W1', '5'],
        ['P1', 'W1', '7'],
        ['P2', 'W1', '1'],
      ];
      const id = await submitJob(tenant, { resource: 'stocks', format: 'csv', delimiter: ';' }, [
        csv(['product_code', 'location', 'quantity'], rows).replaceAll(',', ';'),
      ]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 3, invalid: 0, created: 2, updated: 0, ignored: 1 });
      assert.deepEqual(
        (await resultsOf(tenant, id, 'ignored')).map((row) => row.line),
        [3],
      );
      const [stock] = await db.query<{ quantity: string }>(
        `SELECT quantity::text AS quantity FROM stocks WHERE tenant_id = $1 AND product_code = 'P1' AND location = 'W1'`,
        [tenant.tenant.tenantId],
      );
      assert.equal(stock!.quantity, '5.00');
    });

    test('NDJSON: one object a line, numbers kept whole, a line that is no object invalid', async () => {
      const customers = batchResources.find((resource) => resource.name === 'customers')!;
      const lines = [
        JSON.stringify(validItem(customers, 1)),
        '',
        '[1, 2]',
        '{"code": "C2", "name": "Two"',
        // A term with more digits than a float holds exactly: kept whole, so refused by its range, not rounded.
        JSON.stringify(validItem(customers, 3)).replace(/"term":\d+/, '"term":32767.00000000000000001'),
        JSON.stringify(validItem(customers, 4)),
      ];
      const id = await submitJob(tenant, { resource: 'customers', format: 'ndjson', on_invalid: 'skip' }, [
        `${lines.join('\r\n')}\n`,
      ]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 5, invalid: 3, created: 2, updated: 0, ignored: 0 });
      const failed = await resultsOf(tenant, id, 'failed');
      assert.deepEqual(failed.slice(0, 2), [
        { line: 3, key: {}, errors: [{ field: null, message: 'Item must be an object' }] },
        { line: 4, key: {}, errors: [{ field: null, message: 'The line is not valid JSON' }] },
      ]);
      assert.equal(failed[2]!.line, 5);
      assert.deepEqual(failed[2]!.errors, [{ field: 'term', message: 'Field must be of type integer' }]);
      assert.deepEqual(
        (await resultsOf(tenant, id, 'created')).map((row) => row.line),
        [1, 6],
      );
    });

    test('NDJSON deliveries: each with its items, written by the batch statement with its children', async () => {
      const deliveries = batchResources.find((resource) => resource.name === 'deliveries')!;
      const first = validItem(deliveries, 1);
      const second = validItem(deliveries, 2);
      // The repeat of the first code brings items of its own: ignored with it, none of them written.
      const firstItems = first.items as { item_number: number }[];
      const repeat = { ...first, items: [{ ...firstItems[0]!, item_number: 999 }] };
      const id = await submitJob(tenant, { resource: 'deliveries', format: 'ndjson' }, [
        `${JSON.stringify(first)}\n${JSON.stringify(second)}\n${JSON.stringify(repeat)}\n`,
      ]);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      // Insert-if-absent: the first occurrence of a code wins, the repeat is ignored.
      assert.deepEqual(job.rows, { received: 3, invalid: 0, created: 2, updated: 0, ignored: 1 });
      assert.deepEqual(await resultsOf(tenant, id, 'ignored'), [{ line: 3, key: { code: first.code } }]);
      const items = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM delivery_items WHERE tenant_id = $1 AND delivery_code = ANY($2::text[])',
        [tenant.tenant.tenantId, [first.code, second.code]],
      );
      const sent = firstItems.length + (second.items as unknown[]).length;
      assert.equal(items[0]!.n, sent);
      const repeated = await db.query(
        'SELECT 1 FROM delivery_items WHERE tenant_id = $1 AND delivery_code = $2 AND item_number = 999',
        [tenant.tenant.tenantId, first.code],
      );
      assert.equal(repeated.length, 0, "the ignored repeat's items were written");
    });

    test('the job refuses what its state does not allow, and what is not a job', async () => {
      const bad = await tenant.post('/v1/jobs', {
        resource: 'nope',
        format: 'xml',
        on_invalid: 'maybe',
        extra: 1,
      });
      assert.equal(bad.status, 400);
      assert.deepEqual(
        bad.body.errors.map((error: { field: string }) => error.field),
        ['resource', 'format', 'on_invalid', 'extra'],
      );
      const deliveriesCsv = await tenant.post('/v1/jobs', { resource: 'deliveries', format: 'csv' });
      assert.equal(deliveriesCsv.status, 400);
      assert.equal(deliveriesCsv.body.errors[0].field, 'format');
      const ndjsonDelimiter = await tenant.post('/v1/jobs', {
        resource: 'prices',
        format: 'ndjson',
        delimiter: ';',
      });
      assert.equal(ndjsonDelimiter.status, 400);

      const id = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      const none = await postEmpty(tenant, `/v1/jobs/${id}/complete`);
      assert.equal(none.status, 400);
      assert.match(none.body.errors[0].message, /no part 1/);
      assert.equal((await putPart(tenant, id, 0, 'x')).status, 400);
      assert.equal((await putPart(tenant, id, 10_001, 'x')).status, 400);
      assert.equal((await putPart(tenant, id, 2, 'P1,L7,1\n')).status, 200);
      const gap = await postEmpty(tenant, `/v1/jobs/${id}/complete`);
      assert.equal(gap.status, 400);
      assert.match(gap.body.errors[0].message, /no part 1/);
      // A part sent again replaces it.
      assert.equal((await putPart(tenant, id, 1, 'wrong\n')).status, 200);
      assert.deepEqual((await putPart(tenant, id, 1, 'product_code,price_list,price\n')).body, {
        part: 1,
        bytes: 30,
      });
      assert.equal((await postEmpty(tenant, `/v1/jobs/${id}/complete`)).status, 202);
      const late = await putPart(tenant, id, 3, 'x');
      assert.equal(late.status, 409);
      assert.equal((await postEmpty(tenant, `/v1/jobs/${id}/complete`)).status, 409);
      await runJobs(app());
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: 1, invalid: 0, created: 1, updated: 0, ignored: 0 });
      const aborted = await postEmpty(tenant, `/v1/jobs/${id}/abort`);
      assert.equal(aborted.status, 409);

      const open = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      await putPart(tenant, open, 1, 'product_code,price_list,price\nP1,L9,1\n');
      const abort = await postEmpty(tenant, `/v1/jobs/${open}/abort`);
      assert.equal(abort.status, 200, abort.text);
      assert.equal(abort.body.state, 'aborted');
      assert.equal((await putPart(tenant, open, 2, 'x')).status, 409);

      const listed = await tenant.get('/v1/jobs?limit=2');
      assert.deepEqual(
        listed.body.data.map((row: { id: string }) => row.id),
        [open, id],
      );
      assert.equal((await tenant.get('/v1/jobs?limit=0')).status, 400);
      assert.equal((await tenant.get(`/v1/jobs/${id}/results?outcome=all`)).status, 400);
    });

    test('Idempotency-Key: a create and a completion sent again get their first answers', async () => {
      const key = { 'idempotency-key': `job-${Date.now()}-${Math.random()}` };
      const first = await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' }, key);
      const again = await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' }, key);
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const id = first.body.id;
      assert.equal((await putPart(tenant, id, 1, 'product_code,price_list,price\nP1,K1,1\n')).status, 200);
      const completeKey = { 'idempotency-key': `complete-${id}` };
      const completed = await postEmpty(tenant, `/v1/jobs/${id}/complete`, completeKey);
      assert.equal(completed.status, 202);
      const repeated = await postEmpty(tenant, `/v1/jobs/${id}/complete`, completeKey);
      assert.equal(repeated.status, 202, 'a retry of a completion is not a 409');
      assert.equal(repeated.text, completed.text);
      assert.equal((await postEmpty(tenant, `/v1/jobs/${id}/complete`)).status, 409);
      const listed = (await tenant.get('/v1/jobs?limit=100')).body.data.filter(
        (job: { id: string }) => job.id === id,
      );
      assert.equal(listed.length, 1, 'one job for the key');
      await runJobs(app());
    });

    test('metrics: jobs by state, rows written, bytes stored; a job finished 7 days ago is removed', async () => {
      const { metricValue } = await import('../helpers/metrics.js');
      const written = await metricValue(app(), 'sfa_job_rows_written_total');
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [
        csv(PRICE_HEADER, [
          ['P1', 'M1', '1'],
          ['P2', 'M1', '2'],
        ]),
      ]);
      assert.ok((await metricValue(app(), 'sfa_job_stored_bytes')) > 0, 'the queued job holds its bytes');
      await runJobs(app());
      assert.equal((await metricValue(app(), 'sfa_job_rows_written_total')) - written, 2);
      const states = app().metrics.registry.getSingleMetric('sfa_jobs')!;
      const succeeded = (await states.get()).values.find((value) => value.labels.state === 'succeeded');
      assert.ok(succeeded && succeeded.value >= 1);

      await db.query(`UPDATE jobs SET finished_at = now() - interval '7 days 1 minute' WHERE id = $1`, [id]);
      // A job never completed: aborted after 7 days, its bytes removed.
      const abandoned = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      await putPart(tenant, abandoned, 1, 'product_code,price_list,price\n');
      await db.query(`UPDATE jobs SET created_at = now() - interval '7 days 1 minute' WHERE id = $1`, [
        abandoned,
      ]);
      // A new instance's first round removes what has expired.
      const other = await ownedTenantApp(db);
      await other.transport.app.jobs.round();
      await other.transport.app.close();
      assert.equal((await tenant.get(`/v1/jobs/${id}`)).status, 404);
      assert.equal((await db.query('SELECT 1 FROM job_results WHERE job_id = $1', [id])).length, 0);
      const left = (await tenant.get(`/v1/jobs/${abandoned}`)).body;
      assert.deepEqual([left.state, left.error], ['aborted', 'Never completed']);
      assert.equal(
        (await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [abandoned])).length,
        0,
      );
    });

    test("another tenant's job is not found", async () => {
      const id = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      const other = await ownedTenantApp(db, {}, { app: app() });
      const notFound = { statusCode: 404, errors: [{ message: 'Job not found' }] };
      for (const answer of [
        await other.get(`/v1/jobs/${id}`),
        await other.get(`/v1/jobs/${id}/results`),
        await putPart(other, id, 1, 'x'),
        await postEmpty(other, `/v1/jobs/${id}/complete`),
        await postEmpty(other, `/v1/jobs/${id}/abort`),
      ]) {
        assert.equal(answer.status, 404, answer.text);
        assert.deepEqual(answer.body, notFound);
      }
      assert.deepEqual((await other.get('/v1/jobs')).body.data, []);
    });
  });
}
