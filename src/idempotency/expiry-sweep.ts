import { type LeasedWork, leasedWork } from '../background/leased-work.js';
import type { Queryable } from '../db/database.js';
import { removeExpiredAnswers } from '../sql/idempotency.js';

/** How often the sweep runs, and how long its lease outlives an instance that was killed. */
export const EXPIRY_SWEEP = { name: 'idempotency-expiry', everyMs: 60_000, leaseSeconds: 300 } as const;

/** Answers removed per statement: each statement short, however many expired at once. */
const PIECE = 1_000;

/**
 * Removes the kept answers of Idempotency-Key requests once they expire (extensions.md 8), in one
 * instance at a time. Each new answer also clears a few (src/sql/idempotency.ts, keepAnswer); this
 * sweep clears the rest when writes stop, so the table holds about a TTL's worth of answers whatever
 * the traffic. The first user of the leases of src/background/.
 */
export function idempotencyExpirySweep(db: Queryable, holder: string): LeasedWork {
  return leasedWork(db, {
    ...EXPIRY_SWEEP,
    holder,
    async round() {
      let removed: number;
      do removed = await removeExpiredAnswers(db, PIECE);
      while (removed === PIECE);
    },
  });
}
