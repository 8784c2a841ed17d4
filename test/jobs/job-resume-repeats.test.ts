import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import type { JobWork } from '../../src/jobs/job-work.js';
import { dropStaging, stagingTables } from '../../src/sql/job-staging.js';
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
} from '../helpers/jobs.js';

/*
 * A job resumed while writing finds again which rows a later one replaces (extensions.md 12 and 5:
 * over the whole file, the last occurrence of an upsert's key wins, every other one is ignored),
 * whether its staged rows were kept, emptied or dropped meanwhile (src/sql/job-staging.ts). The
 * first instance stops right after its first block commits (its work closed from inside that block's
 * transaction, so the stop is always at the same line); another instance resumes the job after that
 * block. Two keys occur twice only after the resume point, one across two blocks and one within a
 * block: each earlier occurrence is ignored, each last one written, as in a run never interrupted.
 */

const ROWS = 25_000;
/** The rows (from 0) of the keys that occur twice, all after the first block (rows 0 to 9,999). */
const ACROSS = [12_000, 22_000];
const WITHIN = [15_000, 15_500];
/** The header is line 1: row n is line n + 2. */
const lineOf = (row: number) => row + 2;
const FIRST_BLOCK_END = lineOf(9_999);

function priceFile(): string {
  const rows: string[][] = [];
  for (let n = 0; n < ROWS; n++) {
    const list = ACROSS.includes(n) ? 'ACROSS' : WITHIN.includes(n) ? 'WITHIN' : `L${n}`;
    rows.push(['P1', list, `${n}.25`]);
  }
  return csv(['product_code', 'price_list', 'price'], rows);
}

/** The database, with the work closed (from inside) once the writing's first block commits. */
function closingAfterFirstBlock(db: Database, id: string, work: () => JobWork): Database {
  return aroundWritingTransactions(db, id, async (block, run) => {
    const result = await run();
    // The run stops after this block, as when its instance closes; not awaited, the run ends it.
    if (block === 1) void work().close?.();
    return result;
  });
}

/**
 * What happens to the job's staged rows while no instance runs it: kept; emptied, as a crash's
 * recovery or a promoted standby leaves an unlogged table; or gone. The resumed run copies them
 * again from the file in the last two cases.
 */
const MEANWHILE: Record<string, (db: Database, id: string) => Promise<unknown>> = {
  kept: async () => {},
  emptied: (db, id) => db.query(`TRUNCATE ${stagingTables(id).rows}`),
  gone: (db, id) => dropStaging(db, id),
};

for (const backend of backends()) {
  describe(`a job resumed while writing on ${backend.name}`, () => {
    for (const [meanwhile, change] of Object.entries(MEANWHILE)) {
      test(`finds a key repeated after its resume point, its staged rows ${meanwhile}: the earlier occurrence ignored, the last one written`, async () => {
        const db = await backend.db();
        const tenant = await ownedTenantApp(db);
        try {
          await seedProducts(tenant, ['P1']);
          await drainJobs(db);
          const id = await submitJob(tenant, { resource: 'prices', format: 'csv', on_invalid: 'reject' }, [
            priceFile(),
          ]);
          const settings = { maxRunning: 1 };
          const first: JobWork = testJobWork(
            closingAfterFirstBlock(db, id, () => first),
            'instance-1',
            { settings },
          );
          await first.round();
          assert.equal(await holderOf(db, id), 'instance-1', `instance-1 did not take job ${id}`);
          await first.settled();
          const [stopped] = await db.query<{ state: string; holder: string | null; written: number }>(
            'SELECT state, holder, written_line::int AS written FROM jobs WHERE id = $1',
            [id],
          );
          assert.deepEqual(
            stopped,
            { state: 'writing', holder: null, written: FIRST_BLOCK_END },
            `job ${id} was not let go after its first block: ${JSON.stringify(stopped)}`,
          );

          await change(db, id);
          const second = testJobWork(db, 'instance-2', { settings });
          await second.round();
          assert.equal(await holderOf(db, id), 'instance-2', `instance-2 did not resume job ${id}`);
          await second.settled();
          await second.close?.();
          const job = (await tenant.get(`/v1/jobs/${id}`)).body;
          assert.equal(
            job.state,
            'succeeded',
            `job ${id} ended ${job.state}, not succeeded: ${JSON.stringify(job)}`,
          );
          assert.deepEqual(
            job.rows,
            { received: ROWS, invalid: 0, created: ROWS - 2, updated: 0, ignored: 2 },
            `job ${id} did not ignore the two earlier occurrences: ${JSON.stringify(job.rows)}`,
          );
          const ignored = await resultsOf(tenant, id, 'ignored');
          assert.deepEqual(
            ignored.map((row) => [row.line, row.key]),
            [
              [lineOf(ACROSS[0]!), { product_code: 'P1', price_list: 'ACROSS' }],
              [lineOf(WITHIN[0]!), { product_code: 'P1', price_list: 'WITHIN' }],
            ],
            `the ignored results are not the earlier occurrences: ${JSON.stringify(ignored)}`,
          );
          const created = new Set((await resultsOf(tenant, id, 'created')).map((row) => row.line));
          for (const row of [ACROSS[1]!, WITHIN[1]!]) {
            assert.ok(created.has(lineOf(row)), `line ${lineOf(row)}, the last occurrence, was not created`);
          }
          assert.equal(
            created.size,
            ROWS - 2,
            `job ${id} has ${created.size} created lines, not ${ROWS - 2}`,
          );
          assert.deepEqual(await resultsOf(tenant, id, 'updated'), [], `job ${id} updated a row`);
          const [left] = await db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'job_%' AND relname LIKE $1",
            [`%${id.slice(4)}`],
          );
          assert.equal(left!.n, 0, `job ${id}'s staging tables were not dropped when it ended`);
          await first.close?.();
        } finally {
          await tenant.transport.app.close();
        }
      });
    }
  });
}
