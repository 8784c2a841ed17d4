import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ADMISSION } from '../../src/admission/admission-limits.js';
import { BatchAdmission } from '../../src/admission/batch-admission.js';
import type { Database } from '../../src/db/database.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, drainJobs, holderOf, resultsOf, submitJob, testJobWork, until } from '../helpers/jobs.js';

/*
 * The writing makes its next block ready while one is written only while the process answers
 * nothing else (src/jobs/job-run.ts): it does so then, and either way the rows, counts and results
 * are the same.
 */

/**
 * The database, with the `after` line of every read of a job's failed lines recorded, and each
 * transaction's end marked (-1) among them: the order tells what was read before which write ended.
 */
function watchingFailedReads(db: Database, afters: number[]): Database {
  return new Proxy(db, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === 'transaction') {
        return async (...args: unknown[]) => {
          try {
            return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } finally {
            afters.push(TRANSACTION_ENDED);
          }
        };
      }
      if (name !== 'query') return typeof value === 'function' ? value.bind(target) : value;
      return (sql: string, params?: unknown[]) => {
        if (sql.includes("outcome = 'failed' AND first_line >")) afters.push(Number(params![1]));
        return target.query(sql, params);
      };
    },
  });
}

/** In the list of reads, where a transaction ended. */
const TRANSACTION_ENDED = -1;

const ROWS = 25_000;

/** Three blocks of prices: invalid rows, a key repeated from the first block to the last. */
function priceFile(): string {
  const rows: string[][] = [];
  for (let n = 0; n < ROWS; n++) {
    if (n % 7_919 === 3) rows.push(['P1', `L${n}`, 'not a price']);
    else if (n === 1 || n === ROWS - 2) rows.push(['P2', 'TWICE', `${n}.50`]);
    else rows.push([n % 2 ? 'P1' : 'P2', `L${n}`, `${n % 1000}.25`]);
  }
  return csv(['product_code', 'price_list', 'price'], rows);
}

for (const backend of backends()) {
  describe(`the writing of a bulk job on ${backend.name}`, () => {
    test('one block at a time while the process answers requests, or looking ahead alone: the same outcome', async () => {
      const db = await backend.db();
      const file = priceFile();
      const runs = [];
      for (const serving of [true, false]) {
        const tenant = await ownedTenantApp(db);
        await seedProducts(tenant, ['P1', 'P2']);
        await drainJobs(db);
        const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [file]);
        const work = testJobWork(db, `instance-${serving}`, {
          settings: { maxRunning: 1 },
          serving: () => serving,
        });
        await work.round();
        assert.equal(work.running, 1);
        assert.equal(
          await holderOf(db, id),
          `instance-${serving}`,
          'this instance runs the job of this test',
        );
        await work.settled();
        await work.close?.();
        const job = (await tenant.get(`/v1/jobs/${id}`)).body;
        assert.equal(job.state, 'succeeded', job.error);
        const results: Record<string, unknown[]> = {};
        for (const outcome of ['created', 'updated', 'ignored', 'failed']) {
          results[outcome] = await resultsOf(tenant, id, outcome);
        }
        runs.push({ rows: job.rows, results });
        await tenant.transport.app.close();
      }
      const [oneAtATime, ahead] = runs;
      assert.deepEqual(oneAtATime!.rows, {
        received: ROWS,
        invalid: 4,
        created: ROWS - 5,
        updated: 0,
        ignored: 1,
      });
      assert.deepEqual(ahead, oneAtATime);
      assert.equal(oneAtATime!.results.created!.length, ROWS - 5);
    });

    test('alone, the next block is made ready while one waits to be written; while serving, not', async () => {
      const db = await backend.db();
      // The failed rows' lines of the check's second block (10,002 to 20,001): the first is 15,843.
      // Making that block ready reads them (FailedLines), and nothing else does.
      const secondBlockFailed = 7_919 * 2 + 3 + 2;
      for (const serving of [false, true]) {
        const tenant = await ownedTenantApp(db);
        await seedProducts(tenant, ['P1', 'P2']);
        await drainJobs(db);
        const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'skip' }, [
          priceFile(),
        ]);
        const [{ tenant_id: tenantId }] = (await db.query<{ tenant_id: number }>(
          'SELECT tenant_id FROM jobs WHERE id = $1',
          [id],
        )) as [{ tenant_id: number }];
        // One place, taken: the first block of the writing waits for it.
        const admission = new BatchAdmission({ ...DEFAULT_ADMISSION, running: 1 });
        const held = admission.enter(tenantId, 1);
        await held.admitted;
        const afters: number[] = [];
        const work = testJobWork(watchingFailedReads(db, afters), `ahead-${serving}`, {
          settings: { maxRunning: 1 },
          admission,
          serving: () => serving,
        });
        try {
          await work.round();
          assert.equal(await holderOf(db, id), `ahead-${serving}`, 'this instance runs the job of this test');
          await until(
            async () => admission.counts.waiting,
            (waiting) => waiting === 1,
            'the first block waits for its place',
          );
          const readsSecond = () => afters.includes(secondBlockFailed);
          if (!serving) {
            await until(async () => readsSecond(), Boolean, 'the second block made ready', 30_000);
            assert.ok(readsSecond(), `reads ${JSON.stringify(afters)}`);
          } else {
            // Nothing to wait for: the second block is read only once the first is written. So the
            // place is given, the job ends, and the order of what happened is read after.
            const given = afters.length;
            held.closed();
            await work.settled();
            const read = afters.indexOf(secondBlockFailed);
            const written = afters.indexOf(TRANSACTION_ENDED, given);
            assert.ok(
              written >= 0 && read > written,
              `the first block written, then the second read: ${JSON.stringify(afters)}`,
            );
          }
        } finally {
          // The place given back, so the job ends even when an assertion failed.
          held.closed();
          await work.settled();
          await work.close?.();
        }
        const job = (await tenant.get(`/v1/jobs/${id}`)).body;
        assert.equal(job.state, 'succeeded', job.error);
        assert.equal(job.rows.created, ROWS - 5);
        await tenant.transport.app.close();
      }
    });
  });
}
