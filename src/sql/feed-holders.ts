import type { Queryable } from '../db/database.js';
import { ident } from '../db/sql.js';
import { feedIndexCondition } from './changes.js';

/*
 * What holds the change feed back (extensions.md 10; src/sql/changes.ts): a page serves only rows
 * below the xmin of its snapshot, the oldest transaction id still running anywhere on the server, in
 * any database. A transaction that holds an xid (one that wrote, or locked a row with FOR UPDATE) and
 * stays open keeps every tenant's newer changes out of the feed until it ends.
 */

/** The oldest transaction holding an xid, as PostgreSQL reports it; never its query text. */
export interface XidHolder {
  /** Its backend's pid; null for a prepared transaction (no backend). */
  pid: number | null;
  database: string | null;
  /** pg_stat_activity.state ('idle in transaction', 'active', ...), 'prepared', or null when hidden. */
  state: string | null;
  /** When its transaction began (text, the server's time zone). */
  startedAt: string;
  ageSeconds: number;
}

/** Oldest by xid (the one that sets xmin), not by start: a transaction may take its xid late. */
const OLDEST_HOLDER = `SELECT pid, database, state, started_at::text AS "startedAt", age_seconds AS "ageSeconds"
FROM (
  SELECT pid, datname AS database, state, xact_start AS started_at, age(backend_xid) AS xid_age,
         extract(epoch FROM clock_timestamp() - xact_start)::float8 AS age_seconds
  FROM pg_stat_activity
  WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
  UNION ALL
  SELECT NULL, database, 'prepared', prepared, age(transaction),
         extract(epoch FROM clock_timestamp() - prepared)::float8
  FROM pg_prepared_xacts
) holders
ORDER BY xid_age DESC
LIMIT 1`;

export interface FeedStall {
  /** The oldest transaction holding an xid on the database server, if any. */
  holder: XidHolder | undefined;
  /** Committed feed records not yet served because of it. */
  heldBack: number;
  /**
   * How long the feed has been held back: the holder's age while records wait behind it, else 0.
   * Every waiting record was committed after the holder began, so this bounds the oldest one's age.
   */
  heldBackSeconds: number;
}

export async function oldestXidHolder(q: Queryable): Promise<XidHolder | undefined> {
  const [row] = await q.query<XidHolder>(OLDEST_HOLDER);
  return row;
}

/**
 * Committed feed records not yet served because of a holder: those at or above the snapshot's xmin
 * (visible to this statement, so committed). One range of each table's feed index per tenant.
 */
function heldBackSql(tables: readonly string[]): string {
  const counts = tables.map(
    (table) =>
      `(SELECT count(*) FROM ${ident(table)} t WHERE t.tenant_id = tn.id AND ${feedIndexCondition('t')} AND t.change_xid >= pg_snapshot_xmin(pg_current_snapshot()))`,
  );
  return `SELECT COALESCE(sum(${counts.join('\n  + ')}), 0)::bigint::text AS n FROM tenants tn`;
}

export async function heldBackChanges(q: Queryable, tables: readonly string[]): Promise<number> {
  const [row] = await q.query<{ n: string }>(heldBackSql(tables));
  return Number(row?.n ?? 0);
}
