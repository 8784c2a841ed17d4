import { setImmediate as nextTurn } from 'node:timers/promises';
import { inTurn } from '../admission/batch-admission.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { type BlockWritten, blockWriteSql, writeStagedBlock } from '../sql/job-block-write.js';
import type { ClaimedJob } from '../sql/job-runs.js';
import { isStagingGone, nextBlock } from '../sql/job-staging.js';
import { BLOCK_ROWS } from './file-blocks.js';
import { stageFile } from './job-check.js';
import { checkStopping, JobLetGo, type JobRunContext } from './job-run-context.js';

/*
 * The last stage of a job run (state writing): in line order, a transaction per block of 10,000
 * staged rows (src/sql/job-staging.ts), one statement that writes them by the batch's own rules and
 * records their outcomes and the job's progress (src/sql/job-block-write.ts), so a restart resumes
 * right after the last block committed. The file is not read again, unless the staged rows were lost.
 */

/** The staged rows were lost under the block (their mark gone): nothing of it is kept. */
class StagingLost extends Error {}

/**
 * The writing: from the line after the last block committed to the last staged row. Staged rows that
 * are lost (a crash's recovery empties an unlogged table, a promoted standby has them empty) are
 * copied again from the file after the last block committed, and the writing goes on.
 */
export async function writeFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<void> {
  const sql = blockWriteSql(resource, job.id);
  let fromLine = job.written_line;
  let restaged = false;
  for (;;) {
    // A turn of the event loop between blocks: an embedded database runs each statement on this
    // thread, and requests that arrived meanwhile are read before the next block's statements queue.
    await nextTurn();
    checkStopping(context);
    const next = await nextBlock(context.db, job.id, fromLine, BLOCK_ROWS);
    if (next === 'done') return;
    if (next !== 'lost' && (await writeBlock(context, job, resource, sql, fromLine, next.toLine))) {
      fromLine = next.toLine;
      restaged = false;
      continue;
    }
    // Copied again and lost before a block was written: something drops them; stop rather than loop.
    if (restaged) throw new Error(`the staged rows of job ${job.id} were lost right after they were copied`);
    context.log.warn(
      { job: job.id, fromLine },
      `job ${job.id}: its staged rows were lost (a restart of PostgreSQL or a failover); checking the file again to copy the rows after line ${fromLine}`,
    );
    await stageFile(context, job, resource, fromLine);
    restaged = true;
  }
}

/**
 * One transaction of the writing, in its turn among the tenants' batches (the admission): the block's
 * statement, kept only if the job was this holder's at fromLine and its staged rows complete. False:
 * they were not (nothing written).
 */
async function writeBlock(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  sql: string,
  fromLine: number,
  toLine: number,
): Promise<boolean> {
  const { db } = context;
  const block = {
    tenantId: job.tenant_id,
    jobId: job.id,
    holder: context.holder,
    leaseSeconds: context.leaseSeconds,
    fromLine,
    toLine,
  };
  const transaction = () => {
    // The lease found another's while the block waited for its place: not even tried (its statement
    // would change nothing all the same, after writing and rolling back the rows).
    if (context.lost()) throw new JobLetGo('lost');
    return db.transaction(async (tx) => {
      const written = await writeStagedBlock(tx, sql, block);
      if (written.held !== 1) throw new JobLetGo('lost');
      if (written.marked !== 1) throw new StagingLost();
      return written;
    });
  };
  let written: BlockWritten;
  try {
    written = await inTurn(
      context.admission,
      job.tenant_id,
      resource.bodyLimit,
      () => checkStopping(context),
      transaction,
      context.lostSignal,
    );
  } catch (error) {
    if (error instanceof StagingLost || isStagingGone(error)) return false;
    throw error;
  }
  await db.wrote(resource.table, written.created + written.updated);
  if (resource.children) await db.wrote(resource.children.table, written.children);
  context.wroteRows(resource.name, written.rows);
  return true;
}
