import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { csv, postEmpty, putPart, resultsOf, runJobs } from '../helpers/jobs.js';

/*
 * Another tenant's job is not found (extensions.md 12), and nothing it sends changes it: a part, a
 * completion or an abort aimed at tenant A's open job by tenant B is answered 404 and leaves the job
 * as A left it, open with its part, which A then completes and runs to its own rows. (A 404 alone
 * would let a statement without its tenant condition abort or fill A's job unseen.)
 */

const NOT_FOUND = { statusCode: 404, errors: [{ message: 'Job not found' }] };
const HEADER = ['product_code', 'price_list', 'price'];

for (const backend of backends()) {
  describe(`another tenant's calls on a job on ${backend.name}`, () => {
    test('are answered 404 and leave the owner’s job open with its parts, to run as the owner sent it', async () => {
      const db = await backend.db();
      const owner = await ownedTenantApp(db);
      const app = owner.transport.app;
      try {
        const other = await ownedTenantApp(db, {}, { app });
        await seedProducts(owner, ['P1']);
        await seedProducts(other, ['P1']);
        const created = await owner.post('/v1/jobs', { resource: 'prices', format: 'csv' });
        assert.equal(created.status, 201, `job not created: ${created.text}`);
        const id = created.body.id as string;
        const part = csv(HEADER, [
          ['P1', 'OWNER-1', '1.50'],
          ['P1', 'OWNER-2', '2.50'],
        ]);
        const sent = await putPart(owner, id, 1, part);
        assert.equal(sent.status, 200, `the owner's part not taken: ${sent.text}`);
        const before = (await owner.get(`/v1/jobs/${id}`)).body;

        const attempts = {
          'part 1': () => putPart(other, id, 1, csv(HEADER, [['P1', 'OTHER-1', '9']])),
          'part 2': () => putPart(other, id, 2, csv(HEADER, [['P1', 'OTHER-2', '9']])),
          complete: () => postEmpty(other, `/v1/jobs/${id}/complete`),
          abort: () => postEmpty(other, `/v1/jobs/${id}/abort`),
        };
        for (const [what, attempt] of Object.entries(attempts)) {
          const answer = await attempt();
          assert.equal(
            answer.status,
            404,
            `the other tenant's ${what} was answered ${answer.status}: ${answer.text}`,
          );
          assert.deepEqual(answer.body, NOT_FOUND, `the other tenant's ${what} got another body`);
          const now = (await owner.get(`/v1/jobs/${id}`)).body;
          assert.equal(now.state, 'open', `the other tenant's ${what} left job ${id} ${now.state}, not open`);
          assert.deepEqual(
            now.parts,
            before.parts,
            `the other tenant's ${what} changed job ${id}'s parts: ${JSON.stringify(now.parts)}`,
          );
          assert.deepEqual(now, before, `the other tenant's ${what} changed job ${id}`);
        }

        // The owner's job runs as the owner sent it: its own part, nothing of the other tenant's.
        const completed = await postEmpty(owner, `/v1/jobs/${id}/complete`);
        assert.equal(completed.status, 202, `the owner could not complete job ${id}: ${completed.text}`);
        await runJobs(app);
        const done = (await owner.get(`/v1/jobs/${id}`)).body;
        assert.equal(
          done.state,
          'succeeded',
          `job ${id} ended ${done.state}, not succeeded: ${JSON.stringify(done)}`,
        );
        const written = await resultsOf(owner, id, 'created');
        assert.deepEqual(
          written.map((row) => row.key),
          [
            { product_code: 'P1', price_list: 'OWNER-1' },
            { product_code: 'P1', price_list: 'OWNER-2' },
          ],
          `job ${id} did not write the owner's two rows alone: ${JSON.stringify(written)}`,
        );
      } finally {
        await app.close();
      }
    });
  });
}
