/**
 * Units of work an instance claims from the database and runs beside each other (a bulk job, a
 * webhook stream): each fill claims while there is room, never more than `max` at once nor more than
 * `perTenant` of one tenant, and starts each unit without waiting for it, so a slow unit never holds
 * up the claiming of others. What a unit is, how it is claimed, run and let go is the caller's; the
 * pool only counts.
 */
export interface ClaimPoolOptions<Unit> {
  /** Units running at once in this instance. */
  max: number;
  /** Of them, of one tenant: a tenant at its bound is passed to the claim as busy. */
  perTenant: number;
  /** The most units one claim takes (room permitting): 1 for a claim of one row at a time. */
  perClaim: number;
  /** Takes up to `room` units, none of the busy tenants': fewer (or none) when no more are due. */
  claim(room: number, busyTenants: number[]): Promise<readonly Unit[]>;
  tenantOf(unit: Unit): number;
  /**
   * Which unit it is. One this instance runs already can be claimed again when its lease ran out
   * while the run's renewals stalled (the holder is the instance's): it is not started twice, and not
   * let go either, since the running turn holds it.
   */
  keyOf(unit: Unit): string;
  /** Runs one unit to its end; it lets the unit go itself. */
  run(unit: Unit): Promise<void>;
  /** A run that threw: the unit is counted as ended all the same. */
  failed(unit: Unit, error: unknown): void;
  /** Lets go a unit claimed past its tenant's bound (a claim takes whole rows): a later fill takes it. */
  letGo(unit: Unit): Promise<void>;
}

export interface ClaimPool {
  /** Claims and starts units while there is room; returns without waiting for them. */
  fill(): Promise<void>;
  /** Units running now. */
  readonly running: number;
  /** True once stop() was called: no fill claims, and runs are to end at their next safe point. */
  readonly stopped: boolean;
  stop(): void;
  /** Resolves when every unit started so far has ended (tests: a fill, then this). */
  settled(): Promise<void>;
}

export function claimPool<Unit>(options: ClaimPoolOptions<Unit>): ClaimPool {
  const running = new Set<Promise<void>>();
  const runningOf = new Map<number, number>();
  const runningKeys = new Set<string>();
  let stopped = false;

  const busyTenants = () =>
    [...runningOf].filter(([, n]) => n >= options.perTenant).map(([tenant]) => tenant);

  function start(unit: Unit): void {
    const tenant = options.tenantOf(unit);
    const key = options.keyOf(unit);
    runningOf.set(tenant, (runningOf.get(tenant) ?? 0) + 1);
    runningKeys.add(key);
    const done: Promise<void> = options
      .run(unit)
      .catch((error: unknown) => options.failed(unit, error))
      .finally(() => {
        running.delete(done);
        runningKeys.delete(key);
        const left = (runningOf.get(tenant) ?? 1) - 1;
        if (left > 0) runningOf.set(tenant, left);
        else runningOf.delete(tenant);
      });
    running.add(done);
  }

  return {
    get running() {
      return running.size;
    },
    get stopped() {
      return stopped;
    },
    async fill() {
      while (!stopped) {
        const room = options.max - running.size;
        if (room <= 0) return;
        const asked = Math.min(room, options.perClaim);
        const units = await options.claim(asked, busyTenants());
        let started = 0;
        for (const unit of units) {
          if (runningKeys.has(options.keyOf(unit))) continue;
          // Stopped while the claim ran, or past its tenant's bound: let go at once rather than hold it
          // until its lease ends.
          if (stopped || (runningOf.get(options.tenantOf(unit)) ?? 0) >= options.perTenant) {
            // A release that fails (the database away) leaves the unit to its lease's end.
            await options.letGo(unit).catch(() => {});
            continue;
          }
          start(unit);
          started++;
        }
        // Fewer than asked: nothing more is due now, or a tenant's units past its bound wait for the
        // next fill (claiming again at once would only take them back).
        if (started < asked) return;
      }
    },
    stop() {
      stopped = true;
    },
    async settled() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
