/*
 * How long work claimed by an instance (a bulk job, a webhook stream) stays its own without renewal,
 * and how often it is renewed while the work runs (docs/decisions/0141-leases-within-ten-seconds.md).
 * extensions.md 11 and 12: when an instance stops, even by SIGKILL, another takes over its endpoints
 * and its job within 10 seconds. A killed holder's lease runs out at most a lease after its last
 * renewal, and the next claim round finds it (every 250 ms for streams, every second for jobs): 8 s
 * plus a round stays within 10 s. The lease is not sized to cover the work (an attempt may last its
 * whole 15 s): the holder renews it every third of it while the work runs, so two renewals in a row
 * may fail (a database slow for a moment) before it runs out under a live holder.
 */

/** A claimed job's or stream's lease (JOB_LEASE_SECONDS's default; the streams' lease). */
export const TAKEOVER_LEASE_SECONDS = 8;

/** The renewal's period while the work runs: a third of the lease. */
export function renewEveryMs(leaseSeconds: number): number {
  return Math.round((leaseSeconds * 1000) / 3);
}

/** A lease kept while its work runs (keepLease). */
export interface KeptLease {
  /** True once a renewal found the lease no longer this holder's: the work stops and writes nothing. */
  readonly lost: boolean;
  /** Aborted when the lease is lost (an attempt in flight ends at once). */
  readonly signal: AbortSignal;
  /** Ends the renewals (the work ended). */
  stop(): void;
}

/**
 * Renews a lease every `everyMs` while its work runs. `renew` is one statement guarded by the holder
 * (false: the lease is another's now, or the work is gone); a renewal that throws (the database away)
 * is tried again at the next period, and the work's own guarded statements decide meanwhile. The
 * timer is unref'd: it never keeps a process alive.
 */
export function keepLease(renew: () => Promise<boolean>, everyMs: number): KeptLease {
  const controller = new AbortController();
  let lost = false;
  let renewing = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (renewing || lost || stopped) return;
    renewing = true;
    renew()
      .then((held) => {
        // A renewal under way when the work let its lease go finds it gone: not a loss.
        if (held || lost || stopped) return;
        lost = true;
        clearInterval(timer);
        controller.abort();
      })
      .catch(() => {})
      .finally(() => {
        renewing = false;
      });
  }, everyMs);
  timer.unref();
  return {
    get lost() {
      return lost;
    },
    signal: controller.signal,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
