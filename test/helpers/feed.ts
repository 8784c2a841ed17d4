import type { Queryable } from '../../src/db/database.js';

/**
 * Waits until the change feed serves every transaction committed before the call: until the
 * snapshot's xmin has passed the xmax it had then, i.e. every transaction running at the call (in any
 * database of the cluster: xids are the cluster's) has ended. Tests on a PostgreSQL that other suites
 * share call it after their writes; the feed itself is right to hold rows back meanwhile (a running
 * transaction with an older xid may still commit behind them).
 */
export async function feedCaughtUp(db: Queryable, timeoutMs = 30_000): Promise<void> {
  const [{ xmax }] = (await db.query<{ xmax: string }>(
    'SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax',
  )) as [{ xmax: string }];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await db.query<{ done: boolean }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS done',
      [xmax],
    );
    if (row?.done) return;
    if (Date.now() > until) throw new Error(`the feed's horizon did not pass ${xmax} in ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
