import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ADMISSION } from '../../src/admission/admission-limits.js';
import { BatchAdmission } from '../../src/admission/batch-admission.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, drainJobs, holderOf, submitJob, testJobWork, until } from '../helpers/jobs.js';

/*
 * A job's lease is renewed on a clock of its own while its run is held up (extensions.md 12: a job
 * whose instance stops is taken over, and only then): a run that waits longer than the lease for a
 * place of the batch admission keeps its job, and another instance does not take it over meanwhile.
 */

const LEASE_SECONDS = 3;
const ROWS = 300;

for (const backend of backends()) {
  describe(`the lease of a running job on ${backend.name}`, () => {
    test('a run held up for longer than its lease keeps its job: another instance does not take it', async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1']);
      await drainJobs(db);
      const rows = Array.from({ length: ROWS }, (_, n) => ['P1', `LEASE-${n}`, `${n}.25`]);
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [
        csv(['product_code', 'price_list', 'price'], rows),
      ]);
      // The tenant's only place of this instance's admission is taken: the run checks the file, then
      // waits for a place before its first block.
      const admission = new BatchAdmission(DEFAULT_ADMISSION);
      const held = admission.enter(tenant.tenant.tenantId, 64 * 1024 * 1024);
      await held.admitted;
      const settings = { leaseSeconds: LEASE_SECONDS, maxRunning: 1 };
      const first = testJobWork(db, 'instance-1', { settings, admission });
      const second = testJobWork(db, 'instance-2', { settings });
      try {
        await first.round();
        assert.equal(first.running, 1);
        assert.equal(await holderOf(db, id), 'instance-1', 'this instance runs the job of this test');
        const lease = async () =>
          (
            await db.query<{ state: string; holder: string | null; expired: boolean }>(
              'SELECT state, holder, held_until < now() AS expired FROM jobs WHERE id = $1',
              [id],
            )
          )[0]!;
        await until(lease, (job) => job.state === 'writing', 'the check is done, the writing waits');
        const [{ until: firstUntil }] = (await db.query<{ until: string }>(
          'SELECT held_until::text AS until FROM jobs WHERE id = $1',
          [id],
        )) as [{ until: string }];
        // Past the end of the lease as it stood when the writing began.
        await until(
          async () =>
            (await db.query<{ past: boolean }>('SELECT now() > $1::timestamptz AS past', [firstUntil]))[0]!
              .past,
          (past) => past,
          'the first lease would have ended',
        );
        const now = await lease();
        assert.equal(now.holder, 'instance-1');
        assert.equal(now.expired, false, 'the lease was renewed while the run waited');
        await second.round();
        assert.equal(await holderOf(db, id), 'instance-1', 'the other instance did not take the job over');
      } finally {
        held.closed();
      }
      await first.settled();
      await second.settled();
      const job = (await tenant.get(`/v1/jobs/${id}`)).body;
      assert.equal(job.state, 'succeeded', job.error);
      assert.deepEqual(job.rows, { received: ROWS, invalid: 0, created: ROWS, updated: 0, ignored: 0 });
      await first.close?.();
      await second.close?.();
      await tenant.transport.app.close();
    });
  });
}
