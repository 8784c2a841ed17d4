import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ADMISSION } from '../../src/admission/admission-limits.js';
import { BatchAdmission } from '../../src/admission/batch-admission.js';
import type { Database } from '../../src/db/database.js';
import type { JobWork } from '../../src/jobs/job-work.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import {
  aroundWritingTransactions,
  csv,
  drainJobs,
  holderOf,
  resultsOf,
  submitJob,
  testJobWork,
  until,
} from '../helpers/jobs.js';

/*
 * A job whose instance stops is taken over, in-process and without sleeping out a lease
 * (extensions.md 12: within 10 seconds; docs/decisions/0141-leases-within-ten-seconds.md). An
 * instance "dies" by never going on from a point of its run (its database's transactions held at a
 * gate) with its lease's renewals off (as a killed or frozen process renews nothing); its lease runs
 * out when the test moves held_until into the past, as the database's clock would 8 s later. Another
 * instance then claims the job and finishes it with exact counts; the stale holder that wakes after
 * the takeover commits nothing (its block's record is guarded by the holder and the line it read);
 * and a live holder's renewals move its lease forward while it waits, and stop its run once the job is
 * another's.
 */

const ROWS = 25_000;
/** The header is line 1: the first block (10,000 rows) ends at line 10,001. */
const FIRST_BLOCK_END = 10_001;
/** Renewals that never come within a test: the instance renews nothing, as a killed one. */
const NO_RENEWAL = { renewEveryMs: 3_600_000 };

function priceFile(tag: string): string {
  const rows = Array.from({ length: ROWS }, (_, n) => ['P1', `${tag}-${n}`, `${n}.25`]);
  return csv(['product_code', 'price_list', 'price'], rows);
}

/** A gate: the run that reaches it waits until the test opens it; `reached` tells it got there. */
function gate() {
  let open!: () => void;
  let reach!: () => void;
  const opened = new Promise<void>((done) => {
    open = done;
  });
  const reached = new Promise<void>((done) => {
    reach = done;
  });
  const pass = () => {
    reach();
    return opened;
  };
  return { open, reached, pass };
}

/**
 * The database as one instance sees it, the writing's block transactions of job `id` held at gates:
 * `before` the transaction of the given block (numbered from 1), or `after` it committed.
 */
function gated(
  db: Database,
  id: string,
  gates: { before?: Map<number, ReturnType<typeof gate>>; after?: Map<number, ReturnType<typeof gate>> },
): Database {
  return aroundWritingTransactions(db, id, async (block, run) => {
    await gates.before?.get(block)?.pass();
    const result = await run();
    await gates.after?.get(block)?.pass();
    return result;
  });
}

/** Moves the job's lease into the past: what the database's clock shows once it ran out. */
async function leaseRunsOut(db: Database, id: string): Promise<void> {
  await db.query("UPDATE jobs SET held_until = now() - interval '1 second' WHERE id = $1", [id]);
}

async function jobRow(db: Database, id: string) {
  const [row] = await db.query<{ state: string; holder: string | null; written: number; created: number }>(
    'SELECT state, holder, written_line::int AS written, rows_created::int AS created FROM jobs WHERE id = $1',
    [id],
  );
  return row!;
}

/** The tenant's prices of the test's lists in the table, and the job's answer and created results. */
async function outcome(
  db: Database,
  tenant: Awaited<ReturnType<typeof ownedTenantApp>>,
  id: string,
  tag: string,
) {
  const [{ rows }] = (await db.query<{ rows: number }>(
    'SELECT count(*)::int AS rows FROM prices WHERE tenant_id = $1 AND price_list LIKE $2',
    [tenant.tenant.tenantId, `${tag}-%`],
  )) as [{ rows: number }];
  const job = (await tenant.get(`/v1/jobs/${id}`)).body;
  const created = await resultsOf(tenant, id, 'created');
  return { rows, job, created: new Set(created.map((row) => row.line)).size, createdLines: created.length };
}

const EXACT = { received: ROWS, invalid: 0, created: ROWS, updated: 0, ignored: 0 };

for (const backend of backends()) {
  describe(`a job taken over from a stopped instance on ${backend.name}`, () => {
    test('a job whose holder died after a block is claimed and finished by another instance, with exact counts', async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1']);
      await drainJobs(db);
      const tag = `DIED-${backend.name}`;
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [priceFile(tag)]);
      const died = gate();
      const settings = { maxRunning: 1 };
      const first = testJobWork(gated(db, id, { after: new Map([[1, died]]) }), 'instance-1', {
        settings: { ...settings, ...NO_RENEWAL },
      });
      const second = testJobWork(db, 'instance-2', { settings });
      try {
        await first.round();
        assert.equal(await holderOf(db, id), 'instance-1', `instance-1 did not take job ${id}`);
        // The first block committed; the instance dies right after it.
        await died.reached;
        assert.deepEqual(await jobRow(db, id), {
          state: 'writing',
          holder: 'instance-1',
          written: FIRST_BLOCK_END,
          created: 10_000,
        });
        // Held: another instance finds nothing to take until the lease runs out.
        await second.round();
        assert.equal(second.running, 0, 'a held job is not taken');
        await leaseRunsOut(db, id);
        await second.round();
        assert.equal(await holderOf(db, id), 'instance-2', `instance-2 did not take job ${id} over`);
        await second.settled();
        const done = await outcome(db, tenant, id, tag);
        assert.equal(done.job.state, 'succeeded', JSON.stringify(done.job));
        assert.deepEqual(done.job.rows, EXACT);
        assert.equal(done.rows, ROWS);
        assert.equal(done.createdLines, ROWS);
        assert.equal(done.created, ROWS, 'every line created once');
      } finally {
        // The dead instance wakes: its next block finds the job another's and writes nothing.
        died.open();
        await first.settled();
      }
      const after = await outcome(db, tenant, id, tag);
      assert.deepEqual(after.job.rows, EXACT, 'the stale holder changed no count');
      assert.equal(after.rows, ROWS);
      assert.equal(after.createdLines, ROWS);
      await first.close?.();
      await second.close?.();
      await tenant.transport.app.close();
    });

    test('a stale holder that wakes after the takeover cannot commit a block', async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1']);
      await drainJobs(db);
      const tag = `STALE-${backend.name}`;
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [priceFile(tag)]);
      // The first instance freezes before its first block's transaction (its rows read, the line it
      // writes from, 0, known); the second stops after committing that same block.
      const frozen = gate();
      const secondAfterBlock = gate();
      const settings = { maxRunning: 1 };
      const first = testJobWork(gated(db, id, { before: new Map([[1, frozen]]) }), 'instance-1', {
        settings: { ...settings, ...NO_RENEWAL },
      });
      const second = testJobWork(gated(db, id, { after: new Map([[1, secondAfterBlock]]) }), 'instance-2', {
        settings,
      });
      try {
        await first.round();
        assert.equal(await holderOf(db, id), 'instance-1', `instance-1 did not take job ${id}`);
        await frozen.reached;
        await leaseRunsOut(db, id);
        await second.round();
        assert.equal(await holderOf(db, id), 'instance-2', `instance-2 did not take job ${id} over`);
        await secondAfterBlock.reached;
        assert.deepEqual(await jobRow(db, id), {
          state: 'writing',
          holder: 'instance-2',
          written: FIRST_BLOCK_END,
          created: 10_000,
        });
        // The stale holder wakes and tries to commit the block it made ready: refused, rolled back.
        frozen.open();
        await first.settled();
        assert.deepEqual(
          await jobRow(db, id),
          { state: 'writing', holder: 'instance-2', written: FIRST_BLOCK_END, created: 10_000 },
          'the stale holder moved the job',
        );
        const [{ updated }] = (await db.query<{ updated: number }>(
          'SELECT rows_updated::int AS updated FROM jobs WHERE id = $1',
          [id],
        )) as [{ updated: number }];
        assert.equal(updated, 0, 'the stale holder wrote its block again');
      } finally {
        frozen.open();
        secondAfterBlock.open();
        await first.settled();
        await second.settled();
      }
      const done = await outcome(db, tenant, id, tag);
      assert.equal(done.job.state, 'succeeded', JSON.stringify(done.job));
      assert.deepEqual(done.job.rows, EXACT);
      assert.equal(done.rows, ROWS);
      assert.equal(done.createdLines, ROWS, 'every line has one result');
      assert.deepEqual(await resultsOf(tenant, id, 'updated'), [], 'no row was written twice');
      await first.close?.();
      await second.close?.();
      await tenant.transport.app.close();
    });

    test("a waiting run's lease moves forward, and its run stops once the job is another's", async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db);
      await seedProducts(tenant, ['P1']);
      await drainJobs(db);
      const tag = `RENEW-${backend.name}`;
      const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [priceFile(tag)]);
      // The tenant's only place of the first instance's admission is taken: its run checks the file,
      // then waits for a place before its first block, renewing its lease meanwhile (every 50 ms here
      // instead of every third of 8 s: the renewal's period is what the test sets, not the lease's).
      const admission = new BatchAdmission(DEFAULT_ADMISSION);
      const held = admission.enter(tenant.tenant.tenantId, 64 * 1024 * 1024);
      await held.admitted;
      const settings = { maxRunning: 1 };
      const first: JobWork = testJobWork(db, 'instance-1', {
        settings: { ...settings, renewEveryMs: 50 },
        admission,
      });
      const second = testJobWork(db, 'instance-2', { settings });
      const leaseOf = async () =>
        (
          await db.query<{ state: string; holder: string | null; until: string }>(
            'SELECT state, holder, held_until::text AS until FROM jobs WHERE id = $1',
            [id],
          )
        )[0]!;
      try {
        await first.round();
        const writing = await until(leaseOf, (job) => job.state === 'writing', 'the check is done');
        assert.equal(writing.holder, 'instance-1');
        const later = async () =>
          (
            await db.query<{ later: boolean }>(
              'SELECT held_until > $2::timestamptz AS later FROM jobs WHERE id = $1',
              [id, writing.until],
            )
          )[0]!.later;
        await until(later, (moved) => moved, 'the lease moves forward while the run waits', 30_000);
        assert.equal(await holderOf(db, id), 'instance-1');
        // Its lease runs out (a database slower than three renewals): another instance takes the job,
        // tried until the other's claim comes before the holder's next renewal (every 50 ms).
        await until(
          async () => {
            await leaseRunsOut(db, id);
            await second.round();
            return holderOf(db, id);
          },
          (holder) => holder === 'instance-2',
          'the other instance takes the job over',
          30_000,
        );
        // The first run's next renewal finds the job another's: it stops without its place.
        await until(
          async () => first.running,
          (running) => running === 0,
          'the first run stops',
          30_000,
        );
      } finally {
        held.closed();
      }
      await second.settled();
      await first.settled();
      const done = await outcome(db, tenant, id, tag);
      assert.equal(done.job.state, 'succeeded', JSON.stringify(done.job));
      assert.deepEqual(done.job.rows, EXACT);
      assert.equal(done.rows, ROWS);
      assert.equal(done.createdLines, ROWS);
      await first.close?.();
      await second.close?.();
      await tenant.transport.app.close();
    });
  });
}
