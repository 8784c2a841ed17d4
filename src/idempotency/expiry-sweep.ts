import { type LeasedWork, leasedWork } from '../background/leased-work.js';
import type { Queryable } from '../db/database.js';
import { foldResourceRows, removeOldActivity, removeOldWrittenHours } from '../sql/activity.js';
import { removeExpiredAnswers } from '../sql/idempotency.js';

/** How often the sweep runs, and how long its lease outlives an instance that was killed. */
export const EXPIRY_SWEEP = { name: 'idempotency-expiry', everyMs: 60_000, leaseSeconds: 300 } as const;

/** Answers removed per statement: each statement short, however many expired at once. */
const PIECE = 1_000;

/** How long the write requests of GET /v1/activity are kept (extensions.md 14). */
export const ACTIVITY_DAYS = 7;
/** The written-per-hour series keeps a day more than GET /v1/overview shows. */
const WRITTEN_HOURS_DAYS = ACTIVITY_DAYS + 1;

/**
 * Removes the kept answers of Idempotency-Key requests once they expire (extensions.md 8), in one
 * instance at a time. Each new answer also clears a few (src/sql/idempotency.ts, keepAnswer); this
 * sweep clears the rest when writes stop, so the table holds about a TTL's worth of answers whatever
 * the traffic. The first user of the leases of src/background/. The same rounds remove the write
 * requests of GET /v1/activity older than 7 days and the hours of GET /v1/overview's series, and
 * fold its row counts' slots. The lease is named apart only where instances of different purposes
 * share a database (tests beside served processes).
 */
export function idempotencyExpirySweep(
  db: Queryable,
  holder: string,
  name: string = EXPIRY_SWEEP.name,
): LeasedWork {
  return leasedWork(db, {
    ...EXPIRY_SWEEP,
    name,
    holder,
    async round() {
      let removed: number;
      do removed = await removeExpiredAnswers(db, PIECE);
      while (removed === PIECE);
      do removed = await removeOldActivity(db, ACTIVITY_DAYS, PIECE);
      while (removed === PIECE);
      await removeOldWrittenHours(db, WRITTEN_HOURS_DAYS);
      do removed = await foldResourceRows(db, PIECE);
      while (removed === PIECE);
    },
  });
}
