import type { Database, Queryable } from '../db/database.js';
import { ident } from '../db/sql.js';
import { FEED_MOVE, feedIndexCondition } from './changes.js';
import { storedSetting, storeSettingIfAbsent } from './settings.js';

/*
 * The change feed's positions are the transaction ids of one PostgreSQL cluster (change_xid,
 * migration 008): within it the counter only grows, so a cursor stays valid for ever. A dump restored
 * into another cluster keeps the rows' change_xid while the new counter may be behind them (every such
 * row hidden: above every snapshot's xmin) or behind the cursors clients hold (new writes skipped).
 * So the feed remembers the cluster that numbered it; in another one, the first instance to notice
 * starts a new generation of cursors (the feed refuses those of an earlier one), and rows ahead of the
 * counter are moved to the present (docs/decisions/0065-feed-after-restore-to-another-cluster.md).
 */

/** Settings rows: the cluster whose counter numbers the feed, and the generation of its cursors. */
const CLUSTER = 'feed_cluster';
const GENERATION = 'feed_generation';

/** The cluster's identity, the same on its physical copies (replicas, base backups, a PGlite copy). */
const CLUSTER_ID = 'SELECT system_identifier::text AS id FROM pg_control_system()';

export async function clusterIdentity(q: Queryable): Promise<string> {
  const [row] = await q.query<{ id: string }>(CLUSTER_ID);
  return row!.id;
}

/** The generation of the feed's cursors: 0 while the feed was never renumbered. */
export async function feedGeneration(q: Queryable): Promise<number> {
  return Number((await storedSetting(q, GENERATION)) ?? 0);
}

/** Takes the renumbering for this cluster: only one of the instances starting together gets a row. */
const CLAIM = 'UPDATE settings SET value = $2 WHERE name = $1 AND value <> $2 RETURNING 1 AS claimed';
const SET_GENERATION = `INSERT INTO settings (name, value) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`;

/**
 * When the feed was numbered by another cluster: records this one and the new generation, in one
 * transaction; true for the one caller that did. The first start of all records its cluster.
 */
export function claimRenumbering(db: Database, cluster: string, generation: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    await storeSettingIfAbsent(tx, CLUSTER, cluster);
    const claimed = await tx.query(CLAIM, [CLUSTER, cluster]);
    if (claimed.length === 0) return false;
    await tx.query(SET_GENERATION, [GENERATION, String(generation)]);
    return true;
  });
}

/**
 * Whether some row of the tables is ahead of this cluster's transaction counter: one probe of each
 * table's (tenant_id, change_xid, ...) index per tenant, so the check does not grow with the rows.
 */
function aheadSql(tables: readonly string[]): string {
  const probes = tables.map(
    (table) =>
      `EXISTS (SELECT 1 FROM ${ident(table)} t WHERE t.tenant_id = tn.id AND ${feedIndexCondition('t')} AND t.change_xid > pg_current_xact_id())`,
  );
  return `SELECT EXISTS (SELECT 1 FROM tenants tn WHERE ${probes.join('\n  OR ')}) AS ahead`;
}

/** Up to $2 of a tenant's rows ahead of the counter get this statement's transaction's position. */
function movePieceSql(table: string): string {
  const t = ident(table);
  return `WITH moved AS (
  UPDATE ${t} SET ${FEED_MOVE}
  WHERE ctid = ANY (ARRAY(
    SELECT a.ctid FROM ${t} a
    WHERE a.tenant_id = $1 AND ${feedIndexCondition('a')} AND a.change_xid > pg_current_xact_id() LIMIT $2))
  RETURNING 1
)
SELECT count(*)::int AS n FROM moved`;
}

export async function rowsAhead(q: Queryable, tables: readonly string[]): Promise<boolean> {
  const [row] = await q.query<{ ahead: boolean }>(aheadSql(tables));
  return row?.ahead === true;
}

/** Moves up to `most` of the tenant's rows of the table that are ahead of the counter; how many. */
export async function moveRowsAhead(
  q: Queryable,
  table: string,
  tenantId: number,
  most: number,
): Promise<number> {
  const [row] = await q.query<{ n: number }>(movePieceSql(table), [tenantId, most]);
  return row?.n ?? 0;
}
