import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { prices } from '../../src/resources/prices.js';
import {
  createStaging,
  dropStaging,
  markStaged,
  nextBlock,
  StagedText,
  stageRows,
  stagingTables,
} from '../../src/sql/job-staging.js';
import { ownedTenantApp, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import {
  aroundWritingTransactions,
  csv,
  drainJobs,
  postEmpty,
  resultsOf,
  submitJob,
  testJobWork,
} from '../helpers/jobs.js';

/*
 * A job's staged rows (src/sql/job-staging.ts): the writing's blocks read them in line order and only
 * once their copy is marked complete, a block's own statement included; the tables of a job aborted
 * while it was checked go at the next round of the jobs' work, whichever instance runs it.
 */

/**
 * A tenant of its own with a queued job of 25,000 prices (price lists `LABEL-n`), once every other
 * job has ended; the tenant's app is closed by the caller.
 */
async function queuedPricesJob(db: Database, label: string) {
  const tenant = await ownedTenantApp(db);
  await seedProducts(tenant, ['P1']);
  await drainJobs(db);
  const rows = Array.from({ length: 25_000 }, (_, n) => ['P1', `${label}-${n}`, '1.25']);
  const id = await submitJob(tenant, { resource: 'prices', format: 'csv' }, [
    csv(['product_code', 'price_list', 'price'], rows),
  ]);
  return { tenant, id };
}

/** How many of a job's staging tables exist. */
async function stagingTablesOf(db: Database, id: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_class WHERE relkind = 'r' AND relname IN ($1, $2)",
    [`job_rows_${id.slice(4)}`, `job_items_${id.slice(4)}`],
  );
  return row!.n;
}

for (const backend of backends()) {
  describe(`a job's staged rows on ${backend.name}`, () => {
    test('blocks of staged lines in order, and none before the copy is marked complete', async () => {
      const db = await backend.db();
      const id = `job_${'5'.repeat(24)}`;
      await createStaging(db, id, prices);
      const lines = [2, 3, 5, 8, 13, 21, 34];
      const staged = new StagedText(prices);
      for (const line of lines) {
        const values = { product_code: 'P1', price_list: `L${line}`, price: 1.5 } as Record<
          string,
          string | number
        >;
        staged.add(
          line,
          '{"product_code":"P1"}',
          prices.fieldNames.map((name) => values[name] ?? null),
        );
      }
      await db.transaction((tx) => stageRows(tx, id, staged));
      assert.equal(await nextBlock(db, id, 0, 3), 'lost', 'a copy not marked complete is not written');
      await markStaged(db, id);
      assert.deepEqual(await nextBlock(db, id, 0, 3), { toLine: 5 });
      assert.deepEqual(await nextBlock(db, id, 5, 3), { toLine: 21 });
      assert.deepEqual(await nextBlock(db, id, 21, 3), { toLine: 34 });
      assert.equal(await nextBlock(db, id, 34, 3), 'done');
      await db.query(`DELETE FROM job_rows_${'5'.repeat(24)} WHERE job_line = 0`);
      assert.equal(await nextBlock(db, id, 5, 3), 'lost', 'rows without their mark are lost');
      await dropStaging(db, id);
      assert.equal(await nextBlock(db, id, 5, 3), 'lost', 'a table that is gone is lost');
    });

    test("staged rows emptied between a block's look-up and its statement: nothing kept, the rows copied again", async () => {
      const db = await backend.db();
      const { tenant, id } = await queuedPricesJob(db, 'EMPTIED');
      try {
        // Right before the second block's transaction: its look-up found the mark, its statement will not.
        let transactions = 0;
        const emptying = aroundWritingTransactions(db, id, async (block, run) => {
          transactions = block;
          if (block === 2) await db.query(`TRUNCATE ${stagingTables(id).rows}`);
          return run();
        });
        const warnings: string[] = [];
        const log = { warn: (_details: object, message: string) => warnings.push(message) };
        const work = testJobWork(emptying, 'instance-1', { settings: { maxRunning: 1 }, log });
        await work.round();
        await work.settled();
        await work.close?.();
        const job = (await tenant.get(`/v1/jobs/${id}`)).body;
        assert.equal(job.state, 'succeeded', JSON.stringify(job));
        assert.deepEqual(job.rows, { received: 25_000, invalid: 0, created: 25_000, updated: 0, ignored: 0 });
        const created = await resultsOf(tenant, id, 'created');
        assert.equal(new Set(created.map((row) => row.line)).size, 25_000, 'every line created once');
        const [{ n }] = (await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM prices WHERE tenant_id = $1 AND price_list LIKE 'EMPTIED-%'",
          [tenant.tenant.tenantId],
        )) as [{ n: number }];
        assert.equal(n, 25_000);
        // Blocks 1 and 2 (lost), the 15,000 rows copied again in sends of up to 10,000, blocks 2 and 3
        // and the job's end: the copy gathers the check's small blocks, not a transaction each.
        assert.ok(transactions <= 8, `${transactions} transactions while writing`);
        // The operator is told, once: the file is checked again.
        assert.deepEqual(
          warnings.filter((message) => message.includes('staged rows were lost')),
          [
            `job ${id}: its staged rows were lost (a restart of PostgreSQL or a failover); checking the file again to copy the rows after line 10001`,
          ],
        );
      } finally {
        await tenant.transport.app.close();
      }
    });

    test("a job aborted while it is checked: its staging tables go at the next instance's round", async () => {
      const db = await backend.db();
      const { tenant, id } = await queuedPricesJob(db, 'ABORTED');
      try {
        // The check's first staging transaction waits until the job is aborted.
        let release!: () => void;
        const released = new Promise<void>((done) => {
          release = done;
        });
        let reached!: () => void;
        const atGate = new Promise<void>((done) => {
          reached = done;
        });
        let calls = 0;
        const held = new Proxy(db, {
          get(target, name) {
            const value = Reflect.get(target, name, target);
            if (name !== 'transaction') return typeof value === 'function' ? value.bind(target) : value;
            return async (...args: Parameters<Database['transaction']>) => {
              if (++calls === 1) {
                reached();
                await released;
              }
              return target.transaction(...args);
            };
          },
        });
        const first = testJobWork(held, 'instance-1', { settings: { maxRunning: 1 } });
        await first.round();
        await atGate;
        assert.equal(await stagingTablesOf(db, id), 1, 'the check made no staging table');
        const aborted = await postEmpty(tenant, `/v1/jobs/${id}/abort`);
        assert.equal(aborted.status, 200, aborted.text);
        release();
        await first.settled();
        await first.close?.();
        assert.equal(await stagingTablesOf(db, id), 1, 'the aborted run dropped its table itself');
        const second = testJobWork(db, 'instance-2', { settings: { maxRunning: 1 } });
        await second.round();
        await second.settled();
        await second.close?.();
        assert.equal(await stagingTablesOf(db, id), 0, "the aborted job's staging table is still there");
        const [job] = await db.query<{ state: string; rows: number }>(
          `SELECT state, (SELECT count(*)::int FROM prices WHERE tenant_id = jobs.tenant_id AND price_list LIKE 'ABORTED-%') AS rows
           FROM jobs WHERE id = $1`,
          [id],
        );
        assert.deepEqual(job, { state: 'aborted', rows: 0 });
      } finally {
        await tenant.transport.app.close();
      }
    });
  });
}
