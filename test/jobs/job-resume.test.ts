import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import type { JobWork } from '../../src/jobs/job-work.js';
import { stagingTables } from '../../src/sql/job-staging.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import {
  aroundWritingTransactions,
  csv,
  feedKeys,
  resultsOf,
  runJobs,
  submitJob,
  testJobWork,
} from '../helpers/jobs.js';

/*
 * A job outlives the instance that runs it (extensions.md 12): let go mid-writing, it resumes after the
 * last block committed, with the counts and results of a run that was never interrupted and every row
 * once in the change feed; a tenant's jobs run one at a time across instances, other tenants' beside.
 */

const HEADER = ['product_code', 'price_list', 'price'];
const ROWS = 45_000;

/**
 * 45,000 prices (five blocks): rows invalid by a field (5) and by the product they name (6, P3 is not
 * in the master) here and there, a key repeated from the first block to the last.
 */
function priceFile(): string {
  const rows: string[][] = [];
  for (let n = 0; n < ROWS; n++) {
    if (n % 9_973 === 5) rows.push(['P1', `L${n}`, 'not a price']);
    else if (n % 7_919 === 11) rows.push(['P3', `L${n}`, '1.25']);
    else if (n === 0 || n === ROWS - 1) rows.push(['P1', 'TWICE', `${n}.50`]);
    else rows.push([n % 2 ? 'P1' : 'P2', `L${n}`, `${n % 1000}.25`]);
  }
  return csv(HEADER, rows);
}

for (const backend of backends()) {
  describe(`bulk jobs across instances on ${backend.name}`, () => {
    const newTenant = async (db: Database, app?: Parameters<typeof ownedTenantApp>[2]) => {
      const tenant = await ownedTenantApp(db, { jobs: { leaseSeconds: 5 } }, app);
      await seedProducts(tenant, ['P1', 'P2']);
      return tenant;
    };

    for (const staged of ['kept', 'emptied'] as const) {
      test(`let go while writing, its staged rows ${staged}, the job resumes after its last block: the counts of an uninterrupted run, each row once`, async () => {
        const db = await backend.db();
        const file = priceFile();
        // The same file, run straight through, for a tenant of its own.
        const straight = await newTenant(db);
        const reference = await submitJob(
          straight,
          { resource: 'prices', format: 'csv', on_invalid: 'skip' },
          [file],
        );
        await runJobs(straight.transport.app);
        const expected = (await straight.get(`/v1/jobs/${reference}`)).body;
        assert.equal(expected.state, 'succeeded', expected.error);
        assert.deepEqual(expected.rows, {
          received: ROWS,
          invalid: 11,
          created: ROWS - 12,
          updated: 0,
          ignored: 1,
        });
        await straight.transport.app.close();

        const first = await newTenant(db);
        const id = await submitJob(first, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [file]);
        // The instance closes right after its first block commits: its run stops there and lets the job go.
        const work: JobWork = testJobWork(
          aroundWritingTransactions(db, id, async (block, run) => {
            const result = await run();
            if (block === 1) void work.close?.();
            return result;
          }),
          'instance-1',
          { settings: { leaseSeconds: 5 } },
        );
        await work.round();
        await work.settled();
        await first.transport.app.close();
        const [held] = await db.query<{ state: string; holder: string | null; written: number }>(
          'SELECT state, holder, written_line::int AS written FROM jobs WHERE id = $1',
          [id],
        );
        assert.equal(held!.state, 'writing');
        assert.equal(held!.holder, null);
        assert.ok(held!.written > 0 && held!.written < ROWS + 1, `written up to line ${held!.written}`);
        // As a crash's recovery or a promoted standby leaves them: the next run checks the file again.
        if (staged === 'emptied') await db.query(`TRUNCATE ${stagingTables(id).rows}`);

        const second = await ownedTenantApp(
          db,
          { jobs: { leaseSeconds: 5 } },
          {
            app: (await ownedTenantApp(db)).transport.app,
            tenant: first.tenant,
          },
        );
        await runJobs(second.transport.app);
        const job = (await second.get(`/v1/jobs/${id}`)).body;
        assert.equal(job.state, 'succeeded', job.error);
        assert.deepEqual(job.rows, expected.rows);
        // The results of the uninterrupted run, line for line.
        const straightAgain = straight.over(second.transport);
        for (const outcome of ['created', 'updated', 'ignored', 'failed']) {
          const lines = await resultsOf(second, id, outcome);
          assert.deepEqual(lines, await resultsOf(straightAgain, reference, outcome), outcome);
          assert.equal(
            new Set(lines.map((row) => row.line)).size,
            lines.length,
            `${outcome}: every line once`,
          );
        }
        assert.equal((await resultsOf(second, id, 'created')).length, expected.rows.created);
        const keys = await feedKeys(second, 'prices', ['product_code', 'price_list'], ROWS - 12);
        assert.equal(keys.length, ROWS - 12);
        assert.equal(new Set(keys).size, keys.length, 'every row once in the change feed');
        await second.transport.app.close();
      });
    }

    test("a tenant's jobs run one at a time across instances; another tenant's run beside them", async () => {
      const db = await backend.db();
      const one = await newTenant(db);
      const other = await newTenant(db, { app: one.transport.app });
      const small = csv(HEADER, [['P1', `S-${randomUUID().slice(0, 8)}`, '1']]);
      const a1 = await submitJob(one, { resource: 'prices', format: 'csv' }, [small]);
      const a2 = await submitJob(one, { resource: 'prices', format: 'csv' }, [small]);
      const b1 = await submitJob(other, { resource: 'prices', format: 'csv' }, [small]);
      // Another instance on the same database, with a tenant of its own to sign in.
      const second = await ownedTenantApp(db, { jobs: { leaseSeconds: 5 } });
      await createTenant(db, `test-${randomUUID()}`);
      // Each instance claims one job: the first the tenant's first job, the second another tenant's
      // (never the tenant's second one while its first runs).
      await one.transport.app.jobs.round();
      await second.transport.app.jobs.round();
      const holders = await db.query<{ id: string; holder: string | null; state: string }>(
        'SELECT id, holder, state FROM jobs WHERE id = ANY($1::text[])',
        [[a1, a2, b1]],
      );
      const of = (id: string) => holders.find((row) => row.id === id)!;
      // Unless the first (one row) already ended between the two rounds, as it may on a busy machine.
      if (of(a1).state !== 'succeeded')
        assert.equal(of(a2).state, 'queued', 'the second job of a tenant waits for its first');
      assert.ok(of(a1).state !== 'queued' && of(b1).state !== 'queued', JSON.stringify(holders));
      await one.transport.app.jobs.settled();
      await second.transport.app.jobs.settled();
      await runJobs(second.transport.app);
      for (const [tenant, id] of [
        [one, a1],
        [one, a2],
        [other, b1],
      ] as const) {
        assert.equal((await tenant.get(`/v1/jobs/${id}`)).body.state, 'succeeded');
      }
      assert.deepEqual(
        (await one.get(`/v1/jobs/${a2}`)).body.rows.updated,
        1,
        'the second job ran after the first',
      );
      await one.transport.app.close();
      await second.transport.app.close();
    });
  });
}
