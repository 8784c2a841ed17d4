import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { MAX_PART_BYTES } from '../../src/jobs/jobs.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { putPart, runJobs, submitJob } from '../helpers/jobs.js';

/*
 * Hostile files through the API (extensions.md 12, issue 25): each gets a clear state and a message,
 * writes nothing, and leaves no bytes behind; a part over 100 MiB is refused, and a part whose
 * connection drops halfway leaves the part as it was.
 */

const MIB = 1024 * 1024;

for (const backend of backends()) {
  describe(`hostile job files on ${backend.name}`, () => {
    let db: Database;
    let tenant: TenantClient<NewTenant, InjectTransport>;

    before(async () => {
      db = await backend.db();
      tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1', 'P2']);
    });
    after(() => tenant.transport.app.close());

    const failedWith = async (id: string, message: RegExp) => {
      await runJobs(tenant.transport.app);
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'failed', JSON.stringify(job));
      assert.match(job.error, message);
      assert.equal(job.rows.created + job.rows.updated, 0);
      const left = await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [id]);
      assert.equal(left.length, 0, "a finished job's bytes are removed");
    };

    test('100 MiB of binary garbage: failed, not UTF-8', async () => {
      const garbage = Buffer.alloc(100 * MIB);
      for (let at = 0; at < garbage.length; at += 4)
        garbage.writeUInt32LE(((at * 2_654_435_761) | 0x80808080) >>> 0, at);
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [garbage]);
      await failedWith(id, /^The file is not UTF-8 \(in its bytes 0 to /);
    });

    test('a header of 1,000,000 columns: failed, longer than a row may be', async () => {
      const wide = `${Array.from({ length: 1_000_000 }, (_, n) => `c${n}`).join(',')}\nx\n`;
      await failedWith(
        await submitJob(tenant, { resource: 'prices', format: 'csv' }, [wide]),
        /longer than the longest row/,
      );
    });

    test('1,001 columns, a quote never closed, a line of 3 MiB, a broken UTF-8 end', async () => {
      const columns = `${Array.from({ length: 1_001 }, (_, n) => `c${n}`).join(',')}\n`;
      await failedWith(
        await submitJob(tenant, { resource: 'prices', format: 'csv' }, [columns]),
        /1,001 columns/,
      );
      const open = 'product_code,price_list,price\nP1,"L1,1\nP2,L1,2\n';
      await failedWith(
        await submitJob(tenant, { resource: 'prices', format: 'csv' }, [open]),
        /^A quoted value is never closed \(it opens on line 2\)$/,
      );
      const long = `{"code":"${'x'.repeat(3 * MIB)}"}\n`;
      await failedWith(
        await submitJob(tenant, { resource: 'customers', format: 'ndjson' }, [long]),
        /^Line 1 is longer than the longest row allowed/,
      );
      const cut = Buffer.concat([
        Buffer.from('product_code,price_list,price\nP1,L1,1\nP2,'),
        Buffer.from([0xe2, 0x82]),
      ]);
      await failedWith(
        await submitJob(tenant, { resource: 'prices', format: 'csv' }, [cut]),
        /ends inside a character/,
      );
    });

    test('a part over 100 MiB: 413, and nothing of it stays', async () => {
      const id = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      const answer = await putPart(tenant, id, 1, Buffer.alloc(MAX_PART_BYTES + 1, 0x61));
      assert.equal(answer.status, 413, answer.text);
      assert.deepEqual(answer.body, {
        statusCode: 413,
        errors: [{ message: `Request body exceeds the limit of ${MAX_PART_BYTES} bytes for this endpoint` }],
      });
      // Without a Content-Length (chunked): refused as the bytes pass the limit, what was stored dropped.
      // inject gives up on a payload the server stopped reading (AbortError) when the 413 comes first.
      const streamed = await tenant.transport.app
        .inject({
          method: 'PUT',
          url: `/v1/jobs/${id}/parts/1`,
          headers: { ...tenant.headers, 'content-type': 'text/csv' },
          payload: Readable.from(
            (function* () {
              for (let n = 0; n <= 100; n++) yield Buffer.alloc(MIB, 0x61);
            })(),
          ),
        })
        .catch((error: Error) => ({
          statusCode: error.name === 'AbortError' ? 413 : 0,
          body: String(error),
        }));
      assert.equal(streamed.statusCode, 413, streamed.body);
      assert.deepEqual((await tenant.get(`/v1/jobs/${id}`)).body.parts, { count: 0, bytes: 0 });
      // The pieces stored before the limit was passed are dropped before the answer (or, when the
      // client gave up first, just after).
      for (let wait = 0; wait < 100; wait++) {
        if ((await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [id])).length === 0) break;
        await new Promise((done) => setTimeout(done, 50));
      }
      assert.equal((await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [id])).length, 0);
    });

    test('a part whose connection drops halfway: the part stays as it was', async () => {
      const app = tenant.transport.app;
      const id = (await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' })).body.id;
      const first = 'product_code,price_list,price\nP1,L1,1\n';
      assert.equal((await putPart(tenant, id, 1, first)).status, 200);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      // 3 MiB of a declared 8: the connection goes once a piece of this upload is stored (the first
      // upload is one row), so there is something of it to drop.
      const sent = request({
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/jobs/${id}/parts/1`,
        headers: { ...tenant.headers, 'content-type': 'text/csv', 'content-length': String(8 * MIB) },
      });
      sent.on('error', () => {});
      sent.write(Buffer.alloc(3 * MIB, 0x61));
      for (const deadline = Date.now() + 60_000; ; ) {
        const [stored] = await db.query<{ pieces: number }>(
          'SELECT count(*)::int AS pieces FROM job_part_chunks WHERE job_id = $1',
          [id],
        );
        if (stored!.pieces > 1) break;
        assert.ok(Date.now() < deadline, 'a piece of the second upload is stored');
        await new Promise((done) => setTimeout(done, 10));
      }
      sent.destroy();
      // The server drops what it stored of the upload once it sees the connection gone.
      for (let wait = 0; wait < 100; wait++) {
        const stored = await db.query<{ bytes: number }>(
          'SELECT octet_length(data) AS bytes FROM job_part_chunks WHERE job_id = $1',
          [id],
        );
        if (stored.length === 1) break;
        await new Promise((done) => setTimeout(done, 50));
      }
      const stored = await db.query('SELECT 1 FROM job_part_chunks WHERE job_id = $1', [id]);
      assert.equal(stored.length, 1, 'only the first upload of part 1 is stored');
      assert.deepEqual((await tenant.get(`/v1/jobs/${id}`)).body.parts, { count: 1, bytes: first.length });
      await tenant.send({ method: 'POST', path: `/v1/jobs/${id}/complete` });
      await runJobs(app);
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.equal(job.rows.received, 1);
    });
  });
}
