import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { insertChunk, storePart } from '../../src/sql/job-parts.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, postEmpty, putPart, until } from '../helpers/jobs.js';

/*
 * A completion and a part being stored at the same moment, on PostgreSQL (where they run on
 * different connections; PGlite's one connection runs them one after the other): the completion
 * locks the job first and waits for the part's statement, which holds the job in share mode until
 * it commits, so the part is counted in the file, never stored into a job already queued.
 */

for (const backend of backends().filter((candidate) => candidate.name === 'postgres')) {
  describe(`a completion racing a part on ${backend.name}`, () => {
    for (const replacing of [false, true]) {
      test(`waits for the part being stored (${replacing ? 'sent again' : 'new'}) and counts it`, async () => {
        const db = await backend.db();
        const tenant = await ownedTenantApp(db);
        const created = await tenant.post('/v1/jobs', { resource: 'prices', format: 'csv' });
        const id = created.body.id as string;
        const first = csv(['product_code', 'price_list', 'price'], [['P1', 'L1', '1']]);
        assert.equal((await putPart(tenant, id, 1, first)).status, 200);
        // A part sent again changes no key of job_parts: no foreign key check locks the job for it.
        if (replacing) assert.equal((await putPart(tenant, id, 2, 'P1,L2,1\n')).status, 200);
        // Part 2's bytes are stored; its statement runs and is held before its commit.
        const second = new TextEncoder().encode('P1,L2,2.50\n');
        const [{ upload }] = (await db.query<{ upload: number }>(
          "SELECT nextval('job_uploads')::float8 AS upload",
        )) as [{ upload: number }];
        await insertChunk(db, upload, 0, id, second);
        let commit: () => void = () => {};
        const committing = new Promise<void>((resolve) => {
          commit = resolve;
        });
        let stored = false;
        const storing = db.transaction(async (tx) => {
          stored = await storePart(tx, tenant.tenant.tenantId, id, 2, upload, second.byteLength);
          await committing;
        });
        await until(
          async () => stored,
          (done) => done,
          'part 2 is stored, not yet committed',
        );
        try {
          const completing = postEmpty(tenant, `/v1/jobs/${id}/complete`);
          // The completion waits on the job's row: its session is seen waiting for a lock.
          await until(
            async () =>
              (
                await db.query<{ waiting: number }>(
                  `SELECT count(*)::int AS waiting FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'
                     AND query LIKE 'SELECT state FROM jobs WHERE tenant_id%FOR UPDATE'`,
                )
              )[0]!.waiting,
            (waiting) => waiting === 1,
            'the completion waits for the part',
            30_000,
          );
          commit();
          await storing;
          const completed = await completing;
          assert.equal(completed.status, 202, completed.text);
          assert.equal(completed.body.state, 'queued');
          assert.deepEqual(completed.body.parts, {
            count: 2,
            bytes: new TextEncoder().encode(first).byteLength + second.byteLength,
          });
        } finally {
          commit();
          await storing.catch(() => {});
          // Not left queued for the background work of other suites on the same database.
          await postEmpty(tenant, `/v1/jobs/${id}/abort`);
        }
        await tenant.transport.app.close();
      });
    }
  });
}
