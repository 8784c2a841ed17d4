import type { BatchAdmission } from '../admission/batch-admission.js';
import type { Database } from '../db/database.js';

/** Where a job run reports what an operator should know of (the server's log). */
export interface WarnLog {
  warn(details: object, message: string): void;
}

/** What a job run needs of the process it runs in. */
export interface JobRunContext {
  db: Database;
  holder: string;
  leaseSeconds: number;
  /** The writing's transactions take places like batch uploads, so jobs and batches share fairly. */
  admission: BatchAdmission;
  /** True once the server closes: the run stops after its current block, and the job is let go. */
  stopping(): boolean;
  /** True once a renewal found the job's lease another's: the run stops and writes nothing more. */
  lost(): boolean;
  /** Aborted when the lease is lost: a wait for a place of the admission ends at once. */
  lostSignal?: AbortSignal;
  /** Rows written, for the metrics. */
  wroteRows(resource: string, rows: number): void;
  log: WarnLog;
}

/** The job is no longer this run's (taken over, aborted) or the server closes: stop, change nothing more. */
export class JobLetGo extends Error {
  constructor(readonly why: 'lost' | 'stopping') {
    super(why === 'lost' ? 'the job is no longer held by this instance' : 'the server is closing');
    this.name = 'JobLetGo';
  }
}

export function checkStopping(context: JobRunContext): void {
  if (context.lost()) throw new JobLetGo('lost');
  if (context.stopping()) throw new JobLetGo('stopping');
}

/**
 * Rows of a block's per-row work (keys, results) between two turns of the event loop: a block
 * of 10,000 rows in one stretch held other requests for 10-20 ms at a time.
 */
export const YIELD_ROWS = 1_000;
