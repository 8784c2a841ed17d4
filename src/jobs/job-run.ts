import type { BatchResource } from '../resources/batch-resource.js';
import { type ClaimedJob, finishJob, startWriting } from '../sql/job-runs.js';
import { checkFile, findRepeats } from './job-check.js';
import { JobLetGo, type JobRunContext } from './job-run-context.js';
import { writeFile } from './job-write.js';
import type { RepeatedKeys } from './repeated-keys.js';

/*
 * One job run (extensions.md 12), from its claim to its end or until it is let go, in stages: the
 * file's rows read in blocks (file-blocks.ts), each block checked by the batch rules (job-check.ts:
 * the whole file first, state validating: nothing written, every invalid row listed), then written
 * (job-write.ts: in file order, a transaction per block that also records the job's progress, so a
 * restart resumes right after the last block committed). The file is read at each pass rather than
 * held: its size is not bounded, memory is.
 */

/** Runs the claimed job until it ends; throws JobLetGo when it is let go before. */
export async function runJob(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<void> {
  let repeated: RepeatedKeys | undefined;
  if (job.state === 'validating') {
    const verdict = await checkFile(context, job, resource);
    if (verdict.failed !== undefined) {
      if (!(await finishJob(context.db, job.id, context.holder, 'failed', verdict.failed))) {
        throw new JobLetGo('lost');
      }
      return;
    }
    repeated = verdict.repeated;
    if (!(await startWriting(context.db, job.id, context.holder))) throw new JobLetGo('lost');
    job = { ...job, state: 'writing', written_line: 0 };
  } else if (resource.onExisting === 'update') {
    // Resumed while writing: which rows a later one replaces is known again by reading the file.
    repeated = await findRepeats(context, job, resource);
  }
  await writeFile(context, job, resource, repeated);
  if (!(await finishJob(context.db, job.id, context.holder, 'succeeded', null))) throw new JobLetGo('lost');
}
