import pg from 'pg';
import { ident } from '../../src/db/sql.js';
import { decodeCursor } from '../../src/feed/cursor.js';
import { feedResourceNamed } from '../../src/resources/feed.js';
import { changesPageQuery, changesStatement } from '../../src/sql/changes.js';
import { selectList } from '../../src/sql/select-list.js';
import type { ReadSetup } from './reads.js';
import { median, percentile } from './stats.js';

/**
 * The change feed benchmark's pieces (issue 15): page requests timed one at a time over HTTP, the
 * whole download by following next, and the raw floor of the same rows: COPY (SELECT ...) TO STDOUT
 * run in-process on a connection of its own.
 */

export interface Timing {
  p50: number;
  p99: number;
  samples: number;
}

/** call() run `warmup` times untimed, then `requests` times one after another. */
export async function timeCalls(
  call: () => Promise<void>,
  requests: number,
  warmup: number,
): Promise<Timing> {
  for (let n = 0; n < warmup; n++) await call();
  const samples: number[] = [];
  for (let n = 0; n < requests; n++) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
  }
  return { p50: median(samples), p99: percentile(samples, 99), samples: samples.length };
}

export interface FeedPage {
  data: unknown[];
  next: string;
  hasMore: boolean;
}

/** One GET of the service, its 200 body parsed (a failure stops the benchmark). */
export async function getJson<T>(setup: ReadSetup, path: string): Promise<T> {
  const tenant = setup.tenants.main!;
  const answer = await setup.client.request('GET', path, tenant.headers);
  if (answer.status !== 200)
    throw new Error(`${path}: HTTP ${answer.status} ${answer.body.toString().slice(0, 300)}`);
  return JSON.parse(answer.body.toString()) as T;
}

export const feedPath = (limit: number, after?: string) =>
  `/v1/changes?resource=customers&limit=${limit}${after ? `&after=${after}` : ''}`;

/** Follows next from the start until hasMore is false: rows, wall time, and every cursor handed out. */
export async function downloadAll(
  setup: ReadSetup,
  limit: number,
): Promise<{ rows: number; ms: number; cursors: string[] }> {
  const cursors: string[] = [];
  let rows = 0;
  let after: string | undefined;
  const started = performance.now();
  for (;;) {
    const page = await getJson<FeedPage>(setup, feedPath(limit, after));
    rows += page.data.length;
    after = page.next;
    cursors.push(after);
    if (!page.hasMore) break;
  }
  return { rows, ms: performance.now() - started, cursors };
}

/** The service's own statement of the customers' feed after a cursor, and its parameters. */
export function feedStatementAfter(
  tenantId: number,
  limit: number,
  cursor: string,
): { sql: string; params: unknown[] } {
  const feed = feedResourceNamed('customers')!;
  // The benchmark's database was never restored: generation 0.
  const position = decodeCursor(feed, cursor, 0);
  if (typeof position !== 'object' || !position.key) throw new Error(`not a cursor of a row: ${cursor}`);
  return changesPageQuery(changesStatement(feed), {
    tenantId,
    limit,
    after: position,
    handedOut: position.handedOut,
  });
}

/**
 * COPY of every customer of the tenant as the feed's JSON, in the feed's order, to STDOUT, read by
 * this process: the floor of a whole download (one statement, no pages, no HTTP). The rows' JSON is
 * the same expression the feed's page statement builds (the field table's select list).
 */
export async function copyAll(
  url: string,
  tenantId: number,
): Promise<{ rows: number; bytes: number; ms: number }> {
  const feed = feedResourceNamed('customers')!;
  const a = 'c';
  const select = `SELECT to_json(shown) FROM ${ident(feed.source.table)} ${a}
  CROSS JOIN LATERAL (SELECT ${selectList(feed.source.fields, a)}) shown
  WHERE ${a}.tenant_id = ${Number(tenantId)} AND ${a}.change_xid < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY ${a}.change_xid, ${a}.code`;
  const client = new pg.Client({ connectionString: url, application_name: 'sfa-bench-copy' });
  await client.connect();
  try {
    const copy = new CopyOut(`COPY (${select}) TO STDOUT`);
    const started = performance.now();
    await client.query(copy as unknown as pg.QueryConfig);
    await copy.done;
    return { rows: copy.rows, bytes: copy.bytes, ms: performance.now() - started };
  } finally {
    await client.end();
  }
}

/**
 * A COPY ... TO STDOUT for the `pg` client (as pg-copy-streams does, counting instead of streaming):
 * the client hands a submittable the protocol messages of its query; each CopyData is one row.
 */
class CopyOut {
  rows = 0;
  bytes = 0;
  readonly done: Promise<void>;
  #resolve!: () => void;
  #reject!: (error: Error) => void;
  #error: Error | undefined;

  constructor(readonly text: string) {
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  submit(connection: { query(text: string): void }) {
    connection.query(this.text);
  }
  handleCopyData(message: { chunk: Buffer }) {
    this.rows++;
    this.bytes += message.chunk.length;
  }
  handleCommandComplete() {}
  handleError(error: Error) {
    this.#error = error;
  }
  handleReadyForQuery() {
    if (this.#error) this.#reject(this.#error);
    else this.#resolve();
  }
}
