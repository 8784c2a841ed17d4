import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, drainJobs, holderOf, resultsOf, submitJob, testJobWork } from '../helpers/jobs.js';

/*
 * The writing makes its next block ready while one is written only while the process answers
 * nothing else (src/jobs/job-run.ts): either way, the same rows, counts and results.
 */

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
  });
}
