import type { Database } from '../db/database.js';
import { feedResources } from '../resources/feed.js';
import { type Renumbered, renumberFeedIfAhead } from '../sql/feed-positions.js';

/** The tables of the feed's resources, whose rows carry its positions. */
const FEED_TABLES = feedResources.map((feed) => feed.source.table);

/**
 * Run after the migrations, at every start and by `sfa-backoffice migrate`: when a restore into another
 * cluster left the feed's positions ahead of this cluster's transaction counter, every record gets a new
 * position and cursors from before are refused (src/sql/feed-positions.ts). Otherwise one cheap check.
 */
export function renumberFeedAfterRestore(db: Database): Promise<Renumbered | undefined> {
  return db.transaction((tx) => renumberFeedIfAhead(tx, FEED_TABLES));
}

/** What the log and the command say when the feed was renumbered. */
export function renumberedText(renumbered: Renumbered): string {
  const rows = Object.values(renumbered.rows).reduce((sum, n) => sum + n, 0);
  return (
    `the change feed's positions were ahead of this database's transaction counter (restored from ` +
    `another server): ${rows} records renumbered, cursors from before are refused (generation ` +
    `${renumbered.generation}); integrators download again without after`
  );
}
