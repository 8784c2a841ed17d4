/**
 * Admission of batch work: a large batch holds the event loop for tens of
 * milliseconds at a time (parsing, validation, the column literals) and its parsed body takes
 * hundreds of MB of heap; eight at once made another tenant's small reads wait half a second. So at
 * most `running` batches (light ones: up to `lightRunning`, below) are parsed, validated and written
 * at once in this process, and the others wait, their body received but not parsed (a place is asked
 * for once the whole body is in: a client sending slowly holds no place).
 * A tenant may hold at most `runningPerTenant` places; a free place goes to the waiting tenant below
 * that bound served longest ago (a tenant new to the queue first), not to the oldest request, so a
 * tenant with many batches queued does not make another tenant's one batch wait behind all of them.
 * Past its bound a tenant gets a free place only for a light batch (a body under `lightBytes`,
 * parsed inline in a few ms) and only when no batch below its bound waits: a lone tenant's small
 * concurrent uploads then use every place (one place wrote them at 0.5x of the raw floor), while its
 * large ones stay one at a time. Large batches past the bound were measured to take the CPU from other
 * tenants' reads, which wait for no place and so are invisible here: with two of one tenant's
 * 10,000-item batches at once another tenant's reads had a p99 of 329 ms on PostgreSQL and 4 s on
 * PGlite (docs/decisions/0122-admission-lone-tenant-light-batches.md).
 * Light batches may also fill places past `running`, up to `lightRunning`, while no batch that is not
 * light waits: a light batch spends most of its place waiting for the database, so two places left
 * the database idle between one tenant's concurrent small uploads (with the database on a core of
 * its own, 0.72x of the raw floor with two places, 0.88x with eight;
 * docs/decisions/0123-admission-light-places.md). A heavy
 * batch that arrives meanwhile waits only until those places drain, about one light batch's time.
 * A tenant's batches in progress (arriving, waiting or running) are bounded by runningPerTenant +
 * waitingPerTenant: past it a batch is refused at once with 429, before its body is read; one that
 * waited `maxWaitMs` for a place is refused with 503. Both carry Retry-After.
 */
export interface AdmissionLimits {
  /** Batches processed at once in this process (light ones past it: lightRunning). */
  running: number;
  /** Of them, batches of one tenant; past it only light batches, and only when nobody else waits. */
  runningPerTenant: number;
  /** A batch whose body is smaller is light: it may take a place past its tenant's bound. */
  lightBytes: number;
  /**
   * Places in all that light batches may fill while no heavy batch waits (default `running`: none
   * past it), never fewer than `running`. admissionFor gives every database connection but two, at
   * most LIGHT_PLACES_MAX and four per place of `running`: a function, read at each admission,
   * because the pool may open fewer connections for a while (src/db/postgres.ts, after the server
   * refused one as one too many), and light batches must then leave the two to reads all the same.
   */
  lightRunning?: number | (() => number);
  /** Batches of one tenant waiting for a place; 0: refuse when no place is free. */
  waitingPerTenant: number;
  /** How long a batch may wait for a place. */
  maxWaitMs: number;
  /**
   * Bytes of batch bodies this process holds at once, received or being received (a tenant may have
   * 17 batches of up to 64 MiB in progress: a few busy tenants would otherwise exhaust memory).
   * Past it a body is refused with 503, unless it would be the only one held.
   */
  heldBytes: number;
}

/**
 * The defaults (BATCH_CONCURRENCY 2, BATCH_CONCURRENCY_PER_TENANT 1, BATCH_QUEUE_PER_TENANT 16),
 * chosen by measurement (docs/decisions/0120-batch-admission.md; docs/performance.md, "Fairness
 * between tenants"): two places,
 * as many as the worker threads that parse large bodies; while others wait, one per tenant, so that
 * another tenant's batch starts as soon as any place frees. 16 waiting lets an integrator's 8
 * concurrent uploads all succeed.
 */
export const DEFAULT_ADMISSION: AdmissionLimits = {
  running: 2,
  runningPerTenant: 1,
  waitingPerTenant: 16,
  maxWaitMs: 30_000,
  heldBytes: 512 * 1024 * 1024,
  // The size from which a body is parsed in a worker thread (src/body-threads/batch-worker-pool.ts).
  lightBytes: 256 * 1024,
};

/** The most places light batches fill at once (each holds a database connection while it writes). */
export const LIGHT_PLACES_MAX = 8;
