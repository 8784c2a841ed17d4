import { type AdmissionLimits, DEFAULT_ADMISSION, LIGHT_PLACES_MAX } from './admission-limits.js';

/**
 * Why a batch was not let in (the admission below): its tenant has as many batches waiting
 * as it may, the process holds as many bodies as its budget allows, or the batch waited too long (or
 * its client left). Nothing of it was written; it may be sent again after retryAfterSeconds.
 */
export type NotAdmittedReason = 'queueFull' | 'bodiesFull' | 'busy';

export class BatchNotAdmitted extends Error {
  readonly reason: NotAdmittedReason;
  readonly retryAfterSeconds: number;
  constructor(reason: NotAdmittedReason, retryAfterSeconds: number) {
    super(`batch not admitted: ${reason}`);
    this.name = 'BatchNotAdmitted';
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Light places per place of BATCH_CONCURRENCY: an operator who lowers it lowers them too. */
const LIGHT_PLACES_PER_PLACE = 4;
/** Connections that light batches leave to reads and background work. */
const CONNECTIONS_KEPT = 2;

/**
 * The admission of an app: settings from the configuration, defaults for those it leaves out.
 * `connections`: how many the database pool may open (PGlite: 1, so no places past `running`).
 */
export function admissionFor(
  config: {
    batchConcurrency?: number;
    batchConcurrencyPerTenant?: number;
    batchQueuePerTenant?: number;
    batchBodiesMaxBytes?: number;
  },
  connections: () => number,
): BatchAdmission {
  const running = config.batchConcurrency ?? DEFAULT_ADMISSION.running;
  return new BatchAdmission({
    running,
    lightRunning: () =>
      Math.min(LIGHT_PLACES_MAX, LIGHT_PLACES_PER_PLACE * running, connections() - CONNECTIONS_KEPT),
    runningPerTenant: config.batchConcurrencyPerTenant ?? DEFAULT_ADMISSION.runningPerTenant,
    waitingPerTenant: config.batchQueuePerTenant ?? DEFAULT_ADMISSION.waitingPerTenant,
    maxWaitMs: DEFAULT_ADMISSION.maxWaitMs,
    heldBytes: config.batchBodiesMaxBytes ?? DEFAULT_ADMISSION.heldBytes,
    lightBytes: DEFAULT_ADMISSION.lightBytes,
  });
}

/** Retry-After bounds, seconds. */
const MIN_RETRY_S = 1;
const MAX_RETRY_S = 60;
/** The expected hold of a place before any batch finished: a 10,000-item batch takes about that. */
const INITIAL_HOLD_MS = 500;

interface Waiter {
  tenantId: number;
  light: boolean;
  admit(): void;
  refuse(error: Error): void;
  timer: NodeJS.Timeout;
}

/** One batch's place: waiting, then holding a place until the work and the answer are both done. */
export class BatchTicket {
  readonly #admission: BatchAdmission;
  readonly tenantId: number;
  /** Resolves when a place is given; rejects (429/503) when refused or the client went away. */
  readonly admitted: Promise<void>;
  #state: 'waiting' | 'holding' | 'released' = 'waiting';
  #working = 0;
  #answered = false;
  #since = 0;
  #waiter: Waiter | undefined;

  constructor(admission: BatchAdmission, tenantId: number, wait: (ticket: BatchTicket) => Promise<void>) {
    this.#admission = admission;
    this.tenantId = tenantId;
    this.admitted = wait(this);
  }

  /** @internal the admission gave this ticket a place. */
  placed(): void {
    this.#state = 'holding';
    this.#since = performance.now();
    this.#waiter = undefined;
  }

  /** @internal the waiter in the queue, so that a client going away can leave it. */
  queued(waiter: Waiter): void {
    this.#waiter = waiter;
  }

  /**
   * Runs the batch's work inside the place. The place is kept until the work is done even when the
   * client went away meanwhile: otherwise a client closing its connection right after sending a body
   * would get its batch processed outside the bound.
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    // The connection closed between the place being given and the work starting: the place is gone,
    // and nobody reads the answer. Running anyway would process the batch outside the bound.
    if (this.#state !== 'holding') throw new BatchNotAdmitted('busy', 1);
    this.#working++;
    try {
      return await work();
    } finally {
      this.#working--;
      this.#releaseIfDone();
    }
  }

  /** The answer was sent, or the connection closed: a waiting ticket leaves the queue. */
  closed(): void {
    this.#answered = true;
    if (this.#state === 'waiting' && this.#waiter) {
      // Nobody reads this answer; the rejection only ends the request's hooks.
      this.#admission.leave(this.#waiter, new BatchNotAdmitted('busy', 1));
      this.#state = 'released';
      return;
    }
    this.#releaseIfDone();
  }

  #releaseIfDone(): void {
    if (this.#state !== 'holding' || this.#working > 0 || !this.#answered) return;
    this.#state = 'released';
    this.#admission.release(this.tenantId, performance.now() - this.#since);
  }
}

export class BatchAdmission {
  readonly #limits: AdmissionLimits;
  #running = 0;
  readonly #runningOf = new Map<number, number>();
  /** Waiting batches by tenant, oldest first. */
  readonly #waiting = new Map<number, Waiter[]>();
  /**
   * When each tenant with batches running or waiting was last given a place (a serial number): the
   * next place goes to the lowest. Forgotten when the tenant has none, so the map stays bounded.
   */
  readonly #lastServed = new Map<number, number>();
  #serial = 0;
  /** Moving average of how long a place is held, for Retry-After. */
  #holdMs = INITIAL_HOLD_MS;
  /** Batches of each tenant from arrive() until they leave: bounds the bodies held per tenant. */
  readonly #inProgress = new Map<number, number>();
  /** Bytes of bodies received or being received, until their batches leave. */
  #heldBytes = 0;
  /** Waiting batches that are not light: while there is one, no place past `running` is given. */
  #heavyWaiting = 0;

  constructor(limits: AdmissionLimits) {
    if (limits.running < 1 || limits.runningPerTenant < 1) throw new Error('admission limits must be >= 1');
    this.#limits = limits;
  }

  /**
   * The places light batches may fill now. When it grows again (the pool back to its size), waiting
   * light batches take the new places at the next dispatch: the next batch that arrives or leaves.
   */
  get #lightRunning(): number {
    const { running, lightRunning } = this.#limits;
    return Math.max(running, typeof lightRunning === 'function' ? lightRunning() : (lightRunning ?? running));
  }

  /** Batches holding a place and waiting for one (tests, metrics). */
  get counts(): { running: number; waiting: number } {
    let waiting = 0;
    for (const list of this.#waiting.values()) waiting += list.length;
    return { running: this.#running, waiting };
  }

  /**
   * A batch of the tenant arrives, before its body is read: throws the 429 when the tenant already has
   * runningPerTenant + waitingPerTenant batches in progress. Returns the batch's departure (call it
   * once the answer is sent or the connection closed; later calls do nothing).
   */
  arrive(tenantId: number): () => void {
    const count = this.#inProgress.get(tenantId) ?? 0;
    if (count >= this.#limits.runningPerTenant + this.#limits.waitingPerTenant) {
      throw new BatchNotAdmitted('queueFull', this.#retryAfter(count + 1 - this.#limits.runningPerTenant));
    }
    this.#inProgress.set(tenantId, count + 1);
    let departed = false;
    return () => {
      if (departed) return;
      departed = true;
      const left = (this.#inProgress.get(tenantId) ?? 1) - 1;
      if (left === 0) this.#inProgress.delete(tenantId);
      else this.#inProgress.set(tenantId, left);
    };
  }

  /**
   * Holds `bytes` more of a body being received, of which `own` bytes are already held; false (hold
   * nothing) when that would pass the process's budget while other bodies are held. Give them back
   * with releaseBytes.
   */
  holdBytes(bytes: number, own = 0): boolean {
    if (this.#heldBytes > own && this.#heldBytes + bytes > this.#limits.heldBytes) return false;
    this.#heldBytes += bytes;
    return true;
  }

  releaseBytes(bytes: number): void {
    this.#heldBytes -= bytes;
  }

  /** Bytes of bodies held now (tests). */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Retry-After of a body refused for want of memory: about one batch's hold. */
  bytesRetryAfter(): number {
    return this.#retryAfter(1);
  }

  /**
   * A batch of the tenant, its body received, asks for a place. Throws the 429 at once when the tenant already has
   * waitingPerTenant batches waiting; otherwise the ticket's `admitted` settles later.
   */
  enter(tenantId: number, bodyBytes: number): BatchTicket {
    const light = bodyBytes < this.#limits.lightBytes;
    // With nobody waiting, a batch that may run now passes nobody.
    if (
      this.#waiting.size === 0 &&
      ((this.#running < this.#limits.running && (light || this.#belowOwnBound(tenantId))) ||
        (light && this.#running < this.#lightRunning))
    ) {
      const ticket = new BatchTicket(this, tenantId, async () => {});
      this.#take(tenantId, ticket);
      return ticket;
    }
    const waiting = this.#waiting.get(tenantId)?.length ?? 0;
    if (waiting >= this.#limits.waitingPerTenant) {
      throw new BatchNotAdmitted('queueFull', this.#retryAfter(waiting + 1));
    }
    return new BatchTicket(
      this,
      tenantId,
      (ticket) =>
        new Promise<void>((resolve, reject) => {
          const waiter: Waiter = {
            tenantId,
            light,
            admit: () => {
              clearTimeout(waiter.timer);
              this.#take(tenantId, ticket);
              resolve();
            },
            refuse: (error) => {
              clearTimeout(waiter.timer);
              reject(error);
            },
            timer: setTimeout(() => {
              const ahead = this.#waiting.get(tenantId)?.indexOf(waiter) ?? 0;
              this.leave(waiter, new BatchNotAdmitted('busy', this.#retryAfter(ahead + 1)));
            }, this.#limits.maxWaitMs),
          };
          ticket.queued(waiter);
          if (!light) this.#heavyWaiting++;
          const list = this.#waiting.get(tenantId) ?? [];
          list.push(waiter);
          this.#waiting.set(tenantId, list);
          this.#dispatch();
        }),
    );
  }

  /** @internal a waiter gives up (timeout, client gone): out of the queue, refused with `error`. */
  leave(waiter: Waiter, error: Error): void {
    const list = this.#waiting.get(waiter.tenantId);
    const at = list?.indexOf(waiter) ?? -1;
    if (at < 0) return;
    list!.splice(at, 1);
    if (list!.length === 0) this.#waiting.delete(waiter.tenantId);
    this.#forgetIfIdle(waiter.tenantId);
    waiter.refuse(error);
    if (!waiter.light) {
      this.#heavyWaiting--;
      // The light places it held shut are open again.
      this.#dispatch();
    }
  }

  /** @internal a place is free again after being held holdMs. */
  release(tenantId: number, holdMs: number): void {
    this.#running--;
    const of = (this.#runningOf.get(tenantId) ?? 1) - 1;
    if (of === 0) this.#runningOf.delete(tenantId);
    else this.#runningOf.set(tenantId, of);
    this.#forgetIfIdle(tenantId);
    this.#holdMs = 0.8 * this.#holdMs + 0.2 * holdMs;
    this.#dispatch();
  }

  #belowOwnBound(tenantId: number): boolean {
    return (this.#runningOf.get(tenantId) ?? 0) < this.#limits.runningPerTenant;
  }

  #take(tenantId: number, ticket: BatchTicket): void {
    this.#running++;
    this.#runningOf.set(tenantId, (this.#runningOf.get(tenantId) ?? 0) + 1);
    this.#lastServed.set(tenantId, this.#serial++);
    ticket.placed();
  }

  #forgetIfIdle(tenantId: number): void {
    if (!this.#runningOf.has(tenantId) && !this.#waiting.has(tenantId)) this.#lastServed.delete(tenantId);
  }

  /**
   * Gives free places to waiting batches: to the tenant below its own bound served longest ago; when
   * no waiting tenant is below its bound, to the one served longest ago whose next batch is light.
   * Past `running`, only while every waiting batch is light.
   */
  #dispatch(): void {
    while (
      this.#running < this.#limits.running ||
      (this.#running < this.#lightRunning && this.#heavyWaiting === 0)
    ) {
      const next =
        this.#servedLongestAgo((tenantId) => this.#belowOwnBound(tenantId)) ??
        this.#servedLongestAgo((tenantId) => this.#waiting.get(tenantId)![0]!.light);
      if (next === undefined) return;
      const list = this.#waiting.get(next)!;
      const waiter = list.shift()!;
      if (!waiter.light) this.#heavyWaiting--;
      if (list.length === 0) this.#waiting.delete(next);
      waiter.admit();
    }
  }

  /** Of the tenants with batches waiting that pass `eligible`, the one given a place longest ago. */
  #servedLongestAgo(eligible: (tenantId: number) => boolean): number | undefined {
    let next: number | undefined;
    let oldest = Number.POSITIVE_INFINITY;
    for (const tenantId of this.#waiting.keys()) {
      const last = this.#lastServed.get(tenantId) ?? -1;
      if (last < oldest && eligible(tenantId)) {
        oldest = last;
        next = tenantId;
      }
    }
    return next;
  }

  /** Seconds until `position` batches of one tenant could have run, from the average hold. */
  #retryAfter(position: number): number {
    const seconds = Math.ceil((position * this.#holdMs) / this.#limits.runningPerTenant / 1000);
    return Math.min(MAX_RETRY_S, Math.max(MIN_RETRY_S, seconds));
  }
}

/**
 * `work` (a bulk job's block of writes) in a place of the admission, waiting a little at a time for
 * one: jobs take places like batch uploads, so the two share fairly. `checkStopping` throws once the
 * waiting should end; `stop` (a job's lease lost) ends a wait under way at once.
 */
export async function inTurn<T>(
  admission: BatchAdmission,
  tenantId: number,
  bytes: number,
  checkStopping: () => void,
  work: () => Promise<T>,
  stop?: AbortSignal,
): Promise<T> {
  for (;;) {
    checkStopping();
    let ticket: BatchTicket | undefined;
    const leave = () => ticket?.closed();
    try {
      ticket = admission.enter(tenantId, bytes);
      stop?.addEventListener('abort', leave, { once: true });
      await ticket.admitted;
    } catch (error) {
      if (!(error instanceof BatchNotAdmitted)) throw error;
      // The tenant's own batches fill its places: the work waits its turn behind them.
      await new Promise((done) => setTimeout(done, 50));
      continue;
    } finally {
      stop?.removeEventListener('abort', leave);
    }
    try {
      return await ticket.run(work);
    } finally {
      ticket.closed();
    }
  }
}
