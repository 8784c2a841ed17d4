import { randomInt } from 'node:crypto';
import type { Database } from '../db/database.js';
import { feedResources } from '../resources/feed.js';
import {
  claimRenumbering,
  clusterIdentity,
  feedGeneration,
  moveRowsAhead,
  rowsAhead,
} from '../sql/feed-positions.js';
import { tenantIds } from '../sql/tenants.js';

/** The tables of the feed's resources, whose rows carry its positions. */
const FEED_TABLES = feedResources.map((feed) => feed.source.table);

/** Rows moved per statement: each statement short, whatever the tables hold. */
const PIECE = 10_000;

export interface Renumbered {
  /** The generation of cursors this start began, or found begun by another instance. */
  generation: number;
  /** Rows moved to the present, by table. */
  rows: Record<string, number>;
}

/**
 * Run after the migrations, at every start and by `sfa-backoffice migrate`, before anything is served:
 * in a cluster other than the one that numbered the feed (a restore), begins a new generation of
 * cursors and moves the rows ahead of this cluster's counter to the present (src/sql/feed-positions.ts).
 * Undefined when there was nothing to do; either way the caller then reads the generation it serves.
 */
export async function renumberFeedAfterRestore(db: Database): Promise<Renumbered | undefined> {
  // A generation no earlier numbering can have had: a later restore of the same dump gets another.
  const began = await claimRenumbering(db, await clusterIdentity(db), randomInt(1, 2 ** 48));
  const rows: Record<string, number> = {};
  if (await rowsAhead(db, FEED_TABLES)) {
    const tenants = await tenantIds(db);
    for (const table of FEED_TABLES) {
      let moved = 0;
      for (const tenant of tenants) {
        let piece: number;
        do {
          piece = await moveRowsAhead(db, table, tenant, PIECE);
          moved += piece;
        } while (piece === PIECE);
      }
      if (moved === 0) continue;
      rows[table] = moved;
      // Every moved row is a new row version and index entry: the planner's statistics follow.
      await db.wrote(table, moved);
    }
  }
  if (!began && Object.keys(rows).length === 0) return undefined;
  return { generation: await feedGeneration(db), rows };
}

/** What the log and the command say when the feed was renumbered. */
export function renumberedText(renumbered: Renumbered): string {
  const rows = Object.values(renumbered.rows).reduce((sum, n) => sum + n, 0);
  return (
    `the change feed was numbered by another database server (a restore): cursors from before are ` +
    `refused (generation ${renumbered.generation}), integrators download again without after; ` +
    `${rows} records moved to the present`
  );
}
