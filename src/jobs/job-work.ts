import type { BatchAdmission } from '../admission/batch-admission.js';
import type { BackgroundWork } from '../background/background-work.js';
import { claimPool } from '../background/claim-pool.js';
import { keepLease, renewEveryMs, TAKEOVER_LEASE_SECONDS } from '../background/lease-timing.js';
import type { Database } from '../db/database.js';
import { batchResources } from '../resources/index.js';
import { type ClaimedJob, claimJob, releaseJob, renewJob } from '../sql/job-runs.js';
import { dropStaleStaging } from '../sql/job-staging.js';
import { removeExpiredJobs } from '../sql/job-upkeep.js';
import { endJob, runJob } from './job-run.js';
import { JobLetGo, type WarnLog } from './job-run-context.js';

/*
 * Bulk jobs' background work (extensions.md 12), in every instance. Each round claims jobs to run
 * while this instance has room (a lease in the job's row, migration 017: of each tenant only its
 * first unfinished job, so a tenant's jobs run one at a time), and starts each; the round does not
 * wait for them. A run's statements are short and stand alone, or are one block's transaction, so
 * PgBouncer's transaction mode serves them and the change feed's horizon never waits on a job.
 */

export interface JobSettings {
  /** Between rounds. */
  everyMs: number;
  /** How long a claimed job is held without renewal: how soon another instance replaces a dead one. */
  leaseSeconds: number;
  /** How often a running job's lease is renewed (default: a third of the lease; tests set their own). */
  renewEveryMs?: number;
  /** Jobs this instance runs at once (of different tenants). */
  maxRunning: number;
  /** How long a finished job and its results are kept. */
  keepDays: number;
}

export const DEFAULT_JOB_SETTINGS: JobSettings = {
  everyMs: 1_000,
  // Renewed every third of it while the job runs, and by every block: a killed instance's job is
  // taken over within 10 s (src/background/lease-timing.ts, docs/decisions/0141-leases-within-ten-seconds.md).
  leaseSeconds: TAKEOVER_LEASE_SECONDS,
  maxRunning: 2,
  keepDays: 7,
};

/** Runs of one job that failed on an error (not a lease lost) before the job is failed for good. */
const MAX_FAILED_RUNS = 5;
const EXPIRY_EVERY_MS = 60_000;

export interface JobWork extends BackgroundWork {
  /** Resolves when every run started so far has ended (tests: a round, then this). */
  settled(): Promise<void>;
  /** Jobs running in this instance now. */
  readonly running: number;
}

export function jobWork(
  db: Database,
  holder: string,
  settings: JobSettings,
  admission: BatchAdmission,
  wroteRows: (resource: string, rows: number) => void,
  log: WarnLog,
): JobWork {
  const failedRuns = new Map<string, number>();
  let expiredAt = 0;
  const context = {
    db,
    holder,
    leaseSeconds: settings.leaseSeconds,
    admission,
    stopping: () => pool.stopped,
    lost: () => false,
    wroteRows,
    log,
  };

  async function run(job: ClaimedJob): Promise<void> {
    // The lease is renewed on a clock of its own, not only by the run's statements: reading the file
    // or copying its checked rows again, or waiting for a place of the batch admission, can take
    // longer than the lease, and another instance would take the job over meanwhile. A renewal that
    // finds the job another's stops the run before its next statement; a block's statement is
    // guarded by the holder and the line (src/sql/job-block-write.ts), so a run that has not noticed
    // yet keeps nothing either.
    const lease = keepLease(
      () => renewJob(db, job.id, holder, settings.leaseSeconds),
      settings.renewEveryMs ?? renewEveryMs(settings.leaseSeconds),
    );
    const runContext = {
      ...context,
      stopping: () => pool.stopped || lease.lost,
      lost: () => lease.lost,
      lostSignal: lease.signal,
    };
    try {
      const resource = batchResources.find((candidate) => candidate.name === job.resource);
      if (!resource) throw new Error(`no batch resource named ${job.resource}`);
      await runJob(runContext, job, resource);
      failedRuns.delete(job.id);
    } catch (error) {
      // A lost lease is not let go: it is another holder's now, or will be at the next claim. Whatever
      // a run that lost its lease then threw (its admission place given up under it) is no failure
      // of the job's.
      if (lease.lost) return;
      if (error instanceof JobLetGo) {
        if (error.why === 'stopping') await releaseJob(db, job.id, holder).catch(() => {});
        return;
      }
      const runs = (failedRuns.get(job.id) ?? 0) + 1;
      failedRuns.set(job.id, runs);
      log.warn({ err: error, job: job.id, runs }, `job ${job.id} stopped on an error`);
      try {
        if (runs >= MAX_FAILED_RUNS) {
          failedRuns.delete(job.id);
          await endJob(
            db,
            job.id,
            holder,
            'failed',
            'The job stopped on an internal error; the rows written so far stay',
          );
        } else {
          // Let go at once: the next round (here or in another instance) runs it again.
          await releaseJob(db, job.id, holder);
        }
      } catch {
        // The database is away: the lease expires and the job is taken up again then.
      }
    } finally {
      lease.stop();
    }
  }

  // A tenant's jobs run one at a time: the claim passes over the tenants running one here (and, in the
  // statement, those with an older job unfinished), one job a claim.
  const pool = claimPool<ClaimedJob>({
    max: settings.maxRunning,
    perTenant: 1,
    perClaim: 1,
    claim: async (_room, busy) => {
      const job = await claimJob(db, holder, settings.leaseSeconds, busy);
      return job ? [job] : [];
    },
    tenantOf: (job) => job.tenant_id,
    keyOf: (job) => job.id,
    run,
    // run settles its own errors; this is for one it did not foresee.
    failed: (job, error) => log.warn({ err: error, job: job.id }, `job ${job.id} stopped on an error`),
    letGo: (job) => releaseJob(db, job.id, holder),
  });

  return {
    name: 'jobs',
    everyMs: settings.everyMs,
    get running() {
      return pool.running;
    },
    async round() {
      if (pool.stopped) return;
      if (Date.now() - expiredAt >= EXPIRY_EVERY_MS) {
        expiredAt = Date.now();
        while ((await removeExpiredJobs(db, settings.keepDays, 100)) === 100) {}
        // Those of a job aborted while it ran, or ended where its run could not drop them.
        await dropStaleStaging(db);
      }
      await pool.fill();
    },
    settled: () => pool.settled(),
    async close() {
      pool.stop();
      await pool.settled();
    },
  };
}
