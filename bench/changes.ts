/**
 * Change feed benchmark (issue 15): GET /v1/changes?resource=customers against a tenant of 1,000,000
 * customers (`--quick`: 100,000) seeded with `sfa-backoffice seed`, on PostgreSQL, the production build
 * as a child process. Run with `npm run bench:changes`; see bench/README.md.
 *
 * Rows: a feed page of 1,000 beside GET /v1/customers?limit=1000 page 1; a page at the start and at
 * the end of the feed; the whole download (following next) in rows/s beside COPY (SELECT ...) TO
 * STDOUT of the same rows as JSON, in-process; an up-to-date poll (nothing new). Batch writes before
 * and after the feed column are `npm run bench:batch` on both trees (bench/README.md).
 */

import {
  copyAll,
  downloadAll,
  type FeedPage,
  feedPath,
  feedStatementAfter,
  getJson,
  timeCalls,
} from './lib/changes.js';
import { cleanupAll } from './lib/cleanup.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { prepareReads } from './lib/reads.js';
import { formatTable, ms, ratio } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const ROWS = envInt('BENCH_FEED_ROWS', quick ? 100_000 : 1_000_000, 2_000, 10_000_000);
const REQUESTS = envInt('BENCH_FEED_REQUESTS', quick ? 30 : 60, 4, 10_000);
const POLLS = envInt('BENCH_FEED_POLLS', 300, 10, 100_000);
const PAGE = 1000;

async function main(): Promise<void> {
  const started = performance.now();
  console.log(
    `change feed benchmark ${new Date().toISOString()}${quick ? ' (quick)' : ''}: ${await describeMachine(true)}`,
  );
  console.log(`  ${ROWS} customers in one tenant; ${REQUESTS} timed page requests per row, one at a time`);
  try {
    const setup = await prepareReads(
      'postgres',
      { main: { customers: ROWS, deliveries: 0, itemsPerDelivery: 0 } },
      1,
    );
    console.log(`  seeded in ${setup.seedSeconds.main!.toFixed(1)} s`);
    const tenant = setup.tenants.main!;
    const rows: string[][] = [];

    // The whole download first: it checks the feed holds every row once, and hands out the cursors.
    const download = await downloadAll(setup, PAGE);
    if (download.rows !== ROWS) throw new Error(`download: ${download.rows} rows, expected ${ROWS}`);
    const copy = await copyAll(setup.url!, tenant.id);
    if (copy.rows !== ROWS) throw new Error(`COPY: ${copy.rows} rows, expected ${ROWS}`);
    console.log(`  download ${(download.ms / 1000).toFixed(1)} s, COPY ${(copy.ms / 1000).toFixed(1)} s`);

    const call = (path: string, items: number) => async () => {
      const page = await getJson<{ data: unknown[] }>(setup, path);
      if (page.data.length !== items) throw new Error(`${path}: ${page.data.length} rows, expected ${items}`);
    };
    const list = await timeCalls(call('/v1/customers?limit=1000', PAGE), REQUESTS, 5);
    const start = await timeCalls(call(feedPath(PAGE), PAGE), REQUESTS, 5);
    // The last full page: after the cursor of the page two before the end.
    const nearEnd = download.cursors.at(-3)!;
    const end = await timeCalls(call(feedPath(PAGE, nearEnd), PAGE), REQUESTS, 5);
    const last = download.cursors.at(-1)!;
    const poll = await timeCalls(call(feedPath(PAGE, last), 0), POLLS, 20);
    const idle = await getJson<FeedPage>(setup, feedPath(PAGE, last));
    if (idle.next !== last || idle.hasMore) throw new Error('an up-to-date poll must answer its own cursor');
    // The poll's statement alone, in-process: what the database spends of it.
    const { sql, params } = feedStatementAfter(tenant.id, PAGE, last);
    const statement = await timeCalls(
      async () => {
        await setup.raw.query(sql, params);
      },
      POLLS,
      20,
    );

    rows.push(
      ['GET /v1/customers?limit=1000, page 1', `${ms(list.p50)} ms`, `p99 ${ms(list.p99)} ms`, ''],
      [
        'feed page of 1,000 at the start',
        `${ms(start.p50)} ms`,
        `p99 ${ms(start.p99)} ms`,
        `${ratio(start.p50 / list.p50)} of the list page`,
      ],
      [
        `feed page of 1,000 at the end (row ${ROWS - 2 * PAGE + 1})`,
        `${ms(end.p50)} ms`,
        `p99 ${ms(end.p99)} ms`,
        `${ratio(end.p50 / start.p50)} of the start`,
      ],
      [
        'whole download, following next',
        `${Math.round(download.rows / (download.ms / 1000))} rows/s`,
        `${(download.ms / 1000).toFixed(1)} s`,
        `${ratio(download.ms / copy.ms)} of COPY's time`,
      ],
      [
        'COPY (SELECT to_json ...) TO STDOUT, in-process',
        `${Math.round(copy.rows / (copy.ms / 1000))} rows/s`,
        `${(copy.ms / 1000).toFixed(1)} s`,
        `${(copy.bytes / 1024 / 1024).toFixed(0)} MB`,
      ],
      ['up-to-date poll (nothing new), HTTP', `${ms(poll.p50)} ms`, `p99 ${ms(poll.p99)} ms`, ''],
      ['  its statement alone (empty range)', `${ms(statement.p50)} ms`, `p99 ${ms(statement.p99)} ms`, ''],
    );
    console.log(`\n${formatTable(['row', 'median', 'spread', 'ratio'], rows, 1)}`);
  } finally {
    await cleanupAll();
  }
  console.log(
    `\ndone in ${((performance.now() - started) / 1000).toFixed(0)} s; load average (1 min) at start ${loadAtStart}, at end ${load1()}`,
  );
}

const loadAtStart = load1();
await benchMain(main);
