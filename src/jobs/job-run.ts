import type { Database } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import type { ClaimedJob } from '../sql/job-runs.js';
import { finishJob, startWriting } from '../sql/job-runs.js';
import { dropStaging } from '../sql/job-staging.js';
import { checkFile } from './job-check.js';
import { JobLetGo, type JobRunContext } from './job-run-context.js';
import { writeFile } from './job-write.js';

/*
 * One job run (extensions.md 12), from its claim to its end or until it is let go, in stages: the
 * file's rows read in blocks (file-blocks.ts), each block checked by the batch rules (job-check.ts:
 * the whole file first, state validating: nothing written, every invalid row listed, every valid one
 * copied into the job's staging tables), then written (job-write.ts: in line order, a transaction per
 * block of staged rows that also records the job's progress, so a restart resumes right after the
 * last block committed). The file is read at each pass rather than held: its size is not bounded,
 * memory is.
 */

/** Runs the claimed job until it ends; throws JobLetGo when it is let go before. */
export async function runJob(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<void> {
  if (job.state === 'validating') {
    const verdict = await checkFile(context, job, resource);
    if (verdict.failed !== undefined) {
      if (!(await endJob(context.db, job.id, context.holder, 'failed', verdict.failed))) {
        throw new JobLetGo('lost');
      }
      return;
    }
    if (!(await startWriting(context.db, job.id, context.holder))) throw new JobLetGo('lost');
    job = { ...job, state: 'writing', written_line: 0 };
  }
  await writeFile(context, job, resource);
  if (!(await endJob(context.db, job.id, context.holder, 'succeeded', null))) throw new JobLetGo('lost');
}

/** The job ends (finishJob) and its staging tables go, together. False: it was not this holder's. */
export async function endJob(
  db: Database,
  id: string,
  holder: string,
  state: 'succeeded' | 'failed',
  error: string | null,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await finishJob(tx, id, holder, state, error))) return false;
    await dropStaging(tx, id);
    return true;
  });
}
