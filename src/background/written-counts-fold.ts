import type { Queryable } from '../db/database.js';
import { foldWrittenDeltas } from '../sql/written-counts.js';
import { type LeasedWork, leasedWork } from './leased-work.js';

/**
 * How often the counts that write statements append (written_deltas, migration 021) are folded into
 * the overview's counters, and how long the lease outlives an instance that was killed. Often: GET
 * /v1/overview adds every row not yet folded, and a burst of one-item batches appends a row each.
 */
export const WRITTEN_COUNTS_FOLD = { name: 'written-counts-fold', everyMs: 5_000, leaseSeconds: 30 } as const;

/** Rows folded per statement: each statement short, however many were appended. */
const PIECE = 5_000;

/** Folds written_deltas until none is left, in one instance at a time (decision 0150). */
export function writtenCountsFold(db: Queryable, holder: string): LeasedWork {
  return leasedWork(db, {
    ...WRITTEN_COUNTS_FOLD,
    holder,
    async round() {
      while ((await foldWrittenDeltas(db, PIECE)) === PIECE);
    },
  });
}
