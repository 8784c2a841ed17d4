import type { Queryable } from '../db/database.js';
import { claimLease, releaseLease } from '../sql/leases.js';
import type { BackgroundWork } from './background-work.js';

export interface LeasedWorkOptions {
  /** The lease's name, the same in every instance, and the work's. */
  name: string;
  everyMs: number;
  /** How long a lease lasts without renewal: how soon another instance replaces one that was killed. */
  leaseSeconds: number;
  /** This instance (newInstanceId()). */
  holder: string;
  /** The round, run only by the instance that holds the lease. */
  round(): Promise<void>;
}

/**
 * Work that one instance at a time does for all (migration 014): each round first takes or renews
 * the lease in its own short statement, and runs only when it holds it; closing gives it up, so
 * another instance takes over at its next round. An instance killed while holding it is replaced
 * once the lease expires. The lease is not a lock held across the round: a round must be safe to
 * run twice at once (as when a stalled holder's lease expires under it), which short, idempotent
 * statements are.
 */
/** A leased work: whether this instance held the lease at its last round, and its close. */
export interface LeasedWork extends BackgroundWork {
  held(): boolean;
  close(): Promise<void>;
}

export function leasedWork(db: Queryable, options: LeasedWorkOptions): LeasedWork {
  let held = false;
  return {
    name: options.name,
    everyMs: options.everyMs,
    held: () => held,
    async round() {
      held = await claimLease(db, options.name, options.holder, options.leaseSeconds);
      if (held) await options.round();
    },
    async close() {
      if (!held) return;
      held = false;
      await releaseLease(db, options.name, options.holder);
    },
  };
}
