import type { Queryable } from '../db/database.js';
import { ident } from '../db/sql.js';
import { storedSetting } from './settings.js';

/*
 * The change feed's positions are the cluster's transaction ids (change_xid, migration 008). A dump
 * restored into another PostgreSQL cluster keeps the rows' change_xid while that cluster's counter may
 * be far behind: every restored row is then above the reading snapshot's xmin and hidden, and new
 * writes get positions below the cursors clients hold, so they would be skipped. Renumbering gives
 * every row the position of one new transaction and starts a new generation of cursors, which the feed
 * refuses from before (docs/decisions.md, "The feed after a restore").
 */

/** The lock taken by the renumbering, so that instances starting together check one after another. */
const RENUMBER_LOCK = 7_302_215_002;

/** The settings row holding the generation of the feed's cursors; absent: 0. */
const GENERATION = 'feed_generation';

/**
 * Whether some row of these tables has a position above this cluster's transaction counter (only a
 * restore into another cluster makes one). Per tenant: one probe of each table's (tenant_id,
 * change_xid, ...) index, so the check costs the same however many rows there are.
 */
function aheadSql(tables: readonly string[]): string {
  const probes = tables.map(
    (table) =>
      `EXISTS (SELECT 1 FROM ${ident(table)} t WHERE t.tenant_id = tn.id AND t.change_xid > pg_current_xact_id())`,
  );
  return `SELECT EXISTS (SELECT 1 FROM tenants tn WHERE ${probes.join('\n  OR ')}) AS ahead`;
}

const NEXT_GENERATION = `INSERT INTO settings (name, value) VALUES ($1, '1')
ON CONFLICT (name) DO UPDATE SET value = (settings.value::int + 1)::text
RETURNING value::int AS generation`;

/** The generation of the feed's cursors: 0 until the feed was first renumbered. */
export async function feedGeneration(q: Queryable): Promise<number> {
  return Number((await storedSetting(q, GENERATION)) ?? 0);
}

export interface Renumbered {
  /** The new generation of cursors. */
  generation: number;
  /** Rows given a new position, by table. */
  rows: Record<string, number>;
}

/**
 * When a row of the tables is ahead of this cluster's transaction counter: every row of them gets the
 * position of this transaction (in key order within it) and the cursors a new generation. Otherwise
 * nothing. Runs in the caller's transaction, under a lock of its own.
 */
export async function renumberFeedIfAhead(
  tx: Queryable,
  tables: readonly string[],
): Promise<Renumbered | undefined> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [RENUMBER_LOCK]);
  const [check] = await tx.query<{ ahead: boolean }>(aheadSql(tables));
  if (!check?.ahead) return undefined;
  const rows: Record<string, number> = {};
  for (const table of tables) {
    const updated = await tx.query<{ n: number }>(
      `WITH moved AS (UPDATE ${ident(table)} SET change_xid = pg_current_xact_id() RETURNING 1)
SELECT count(*)::int AS n FROM moved`,
    );
    rows[table] = updated[0]?.n ?? 0;
  }
  const [next] = await tx.query<{ generation: number }>(NEXT_GENERATION, [GENERATION]);
  return { generation: next!.generation, rows };
}
