import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { resultsOf, runJobs, submitJob } from '../helpers/jobs.js';

/*
 * A semicolon file sent as a CSV job with the default comma (docs/decisions/0139-job-delimiter-hint.md):
 * every row is invalid by one unknown field, the whole header row; the rows keep the batch's own
 * message, and the job's error says which delimiter to set.
 */

const SEMICOLON_FILE = 'code;description;unit\nH-1;Bolt;box\nH-2;Nut;box\n';

for (const backend of backends()) {
  describe(`a CSV job read with the wrong delimiter on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
    });
    after(() => tenant.transport.app.close());

    const failedJob = async (request: Record<string, string>, file: string) => {
      const id = await submitJob(tenant, { resource: 'products', format: 'csv', ...request }, [file]);
      await runJobs(tenant.transport.app);
      return { id, job: (await tenant.get(`/v1/jobs/${id}`)).body };
    };

    test('reject: the error hints at "delimiter"; the rows keep the batch message', async () => {
      const { id, job } = await failedJob({}, SEMICOLON_FILE);
      assert.equal(job.state, 'failed');
      assert.equal(
        job.error,
        '2 of 2 rows are invalid (results with outcome=failed list them): nothing was written. The header row was read as one column, "code;description;unit": if the file is separated by ";", create the job with "delimiter": ";"',
      );
      const [first] = (await resultsOf(tenant, id, 'failed')) as { errors: { field: string }[] }[];
      assert.deepEqual(
        first!.errors.find((error) => error.field === 'code;description;unit'),
        { field: 'code;description;unit', message: 'Unknown field' },
      );
    });

    test('skip: every row invalid, the same hint; a tab file sent with ";" hints at the tab', async () => {
      const skipped = await failedJob({ on_invalid: 'skip' }, SEMICOLON_FILE);
      assert.match(skipped.job.error, /^All 2 rows are invalid .*create the job with "delimiter": ";"$/);
      const tabbed = await failedJob({ delimiter: ';' }, SEMICOLON_FILE.replaceAll(';', '\t'));
      assert.match(
        tabbed.job.error,
        /separated by "\\t" \(tab\), create the job with "delimiter": "\\t" \(tab\)$/,
      );
    });

    test('an unknown column beside known ones gets no hint', async () => {
      const { job } = await failedJob({}, 'code,description,colour;size\nH-1,Bolt,red\n');
      assert.equal(job.state, 'failed');
      assert.equal(
        job.error,
        '1 of 1 rows are invalid (results with outcome=failed list them): nothing was written',
      );
    });
  });
}
