import type { BackgroundWork } from './background-work.js';

interface WarnLog {
  warn(details: object, message: string): void;
}

/**
 * Runs each background work every everyMs from start() until stop(). Rounds of one work never
 * overlap: a round still running when the next is due is joined, not doubled. A failed round (the
 * database away) is logged once until a round succeeds again, and the next one tries again; it never
 * ends the process. Timers are unref'd: they never keep a process alive.
 */
export class BackgroundLoops {
  readonly #works: ReadonlyMap<string, BackgroundWork>;
  readonly #log: WarnLog;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #running = new Map<string, Promise<void>>();
  readonly #failing = new Set<string>();
  #stopped = false;

  constructor(works: readonly BackgroundWork[], log: WarnLog) {
    this.#works = new Map(works.map((work) => [work.name, work]));
    this.#log = log;
  }

  get names(): string[] {
    return [...this.#works.keys()];
  }

  /** One round of the named work now, or the one under way: what the timer calls, and tests. */
  runRound(name: string): Promise<void> {
    const work = this.#works.get(name);
    if (!work) throw new Error(`no background work named ${name}`);
    let round = this.#running.get(name);
    if (!round) {
      round = work.round().finally(() => this.#running.delete(name));
      this.#running.set(name, round);
    }
    return round;
  }

  /**
   * A round of the named work now when the loops run (serve started them), as when a request made
   * work for it (a job completed): it need not wait for the timer. Does nothing before start() or
   * after stop(), so tests that drive rounds themselves keep driving them.
   */
  nudge(name: string): void {
    if (this.#stopped || this.#timers.length === 0) return;
    void this.#tick(name);
  }

  start(): void {
    if (this.#stopped || this.#timers.length > 0) return;
    for (const work of this.#works.values()) {
      const timer = setInterval(() => void this.#tick(work.name), work.everyMs);
      timer.unref();
      this.#timers.push(timer);
    }
  }

  /** No round starts after this; the ones under way end, then each work gives up what it holds. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
    await Promise.allSettled(this.#running.values());
    for (const work of this.#works.values()) {
      try {
        await work.close?.();
      } catch (error) {
        this.#log.warn({ work: work.name, err: error }, `background work ${work.name}: could not close`);
      }
    }
  }

  async #tick(name: string): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.runRound(name);
      this.#failing.delete(name);
    } catch (error) {
      if (this.#failing.has(name)) return;
      this.#failing.add(name);
      this.#log.warn({ work: name, err: error }, `background work ${name} failed; it runs again next round`);
    }
  }
}
