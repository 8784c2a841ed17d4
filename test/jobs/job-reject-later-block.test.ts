import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, resultsOf, runJobs, submitJob } from '../helpers/jobs.js';

/*
 * A `reject` job is checked as a whole file before anything is written (extensions.md 12), not one
 * block of the check at a time: a file of more rows than one block (10,000, src/jobs/job-run.ts)
 * whose only invalid row is near its end, in the last block, fails, writes nothing, and its failed
 * results name that row's line.
 */

const ROWS = 10_500;
/** The invalid row: in the second block. The header is line 1, so row n is line n + 2. */
const INVALID_ROW = 10_450;
const INVALID_LINE = INVALID_ROW + 2;

for (const backend of backends()) {
  describe(`a reject job with an invalid row in a later block on ${backend.name}`, () => {
    test('fails with nothing written, its failed results naming the invalid row’s line', async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db);
      const app = tenant.transport.app;
      try {
        await seedProducts(tenant, ['P1']);
        const rows = Array.from({ length: ROWS }, (_, n) => [
          'P1',
          `LATE-${n}`,
          n === INVALID_ROW ? 'not a price' : `${n}.25`,
        ]);
        const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'reject' }, [
          csv(['product_code', 'price_list', 'price'], rows),
        ]);
        await runJobs(app);
        const job = (await tenant.get(`/v1/jobs/${id}`)).body;
        assert.equal(job.state, 'failed', `job ${id} ended ${job.state}, not failed: ${JSON.stringify(job)}`);
        assert.equal(
          job.error,
          '1 of 10,500 rows are invalid (results with outcome=failed list them): nothing was written',
          `job ${id} failed for another reason`,
        );
        assert.deepEqual(
          job.rows,
          { received: ROWS, invalid: 1, created: 0, updated: 0, ignored: 0 },
          `job ${id} counted rows other than one invalid and none written`,
        );
        const failed = await resultsOf(tenant, id, 'failed');
        assert.deepEqual(
          failed.map((row) => [row.line, row.key]),
          [[INVALID_LINE, { product_code: 'P1', price_list: `LATE-${INVALID_ROW}` }]],
          `the failed results do not name line ${INVALID_LINE} alone: ${JSON.stringify(failed)}`,
        );
        assert.equal(failed[0]!.errors?.length, 1, `line ${INVALID_LINE} has not one problem`);
        for (const outcome of ['created', 'updated', 'ignored']) {
          const lines = await resultsOf(tenant, id, outcome);
          assert.deepEqual(lines, [], `a rejected job has ${outcome} results: ${lines.length}`);
        }
        const changes = await tenant.get('/v1/changes?resource=prices&limit=10');
        assert.equal(changes.status, 200, `change feed not read: ${changes.text}`);
        assert.deepEqual(
          changes.body.data,
          [],
          `a rejected job wrote prices: ${JSON.stringify(changes.body.data)}`,
        );
      } finally {
        await app.close();
      }
    });
  });
}
