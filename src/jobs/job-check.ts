import { setImmediate as nextTurn } from 'node:timers/promises';
import { type CheckedRows, checkRows, keyOf, sentKeyText } from '../batch/check-block.js';
import type { BatchResource } from '../resources/batch-resource.js';
import {
  type ClaimedJob,
  type FailedBlock,
  recordValidation,
  renewJob,
  startValidation,
} from '../sql/job-runs.js';
import { delimiterHint } from './delimiter-hint.js';
import { type KeptBlock, keptBlocks } from './file-blocks.js';
import { FileProblem } from './file-rows.js';
import { checkStopping, JobLetGo, type JobRunContext, YIELD_ROWS } from './job-run-context.js';
import { RepeatedKeys } from './repeated-keys.js';

/*
 * The second stage of a job run: its blocks checked by the batch's rules (src/batch/check-block.ts),
 * the whole file before anything is written (state validating), and again as each block is written.
 */

/** A block of the file's rows as a pass reads it: checked by the batch rules. */
export interface CheckedBlock extends KeptBlock {
  checked: CheckedRows;
}

/**
 * The file's blocks from the line after `fromLine`, each checked: what every pass of a run reads.
 * Validating: every row, the reference rule included (one query a block). Writing: without the rows
 * the check found invalid, and without the reference rule, which they passed then.
 */
export async function* checkedBlocks(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  fromLine: number,
): AsyncGenerator<CheckedBlock> {
  const validating = job.state === 'validating';
  for await (const { rows, toLine } of keptBlocks(context.db, job, resource, fromLine, !validating)) {
    checkStopping(context);
    const checked = await checkRows(context.db, job.tenant_id, resource, rows, validating);
    yield { rows, toLine, checked };
  }
}

/** A row's key as sent, for its result line. */
export function keyText(resource: BatchResource, item: unknown): string {
  return typeof item === 'object' && item !== null && !Array.isArray(item)
    ? sentKeyText(resource, item as Record<string, unknown>)
    : '{}';
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The check of the whole file (state validating): every row by its batch's rules, the invalid ones
 * kept as results as they are found, the counts as they grow. The verdict: the message the job fails
 * with, or, for an upsert, which rows a later one replaces.
 */
export async function checkFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<{ failed?: string; repeated?: RepeatedKeys | undefined }> {
  const { db, holder, leaseSeconds } = context;
  // A generator reads nothing until it is iterated: the first block is read after the start below.
  const blocks = checkedBlocks(context, job, resource, 0);
  const repeated = resource.onExisting === 'update' ? new RepeatedKeys(job.bytes) : undefined;
  if (!(await startValidation(db, job.id, holder, leaseSeconds))) throw new JobLetGo('lost');
  let received = 0;
  let invalid = 0;
  // Read from the first invalid row: a header read with the wrong delimiter makes every row invalid alike.
  let hint: string | undefined;
  try {
    for await (const { rows: block, checked } of blocks) {
      const lines: number[] = [];
      let body = '';
      for (let at = 0; at < block.length; at++) {
        if (at % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
        const row = block[at]!;
        const errors = checked.errors[at];
        if (errors) {
          if (invalid + lines.length === 0) hint = delimiterHint(job, resource.fieldNames, errors);
          lines.push(row.line);
          body += `{"line":${row.line},"key":${keyText(resource, row.item)},"errors":${JSON.stringify(errors)}}\n`;
        } else if (repeated) {
          repeated.add(keyOf(resource.keyPositions, checked.values[at]!), row.line);
        }
      }
      received += block.length;
      invalid += lines.length;
      const failed: FailedBlock | undefined =
        lines.length > 0 ? { firstLine: lines[0]!, lines, body } : undefined;
      if (!(await recordValidation(db, job.id, holder, leaseSeconds, { received, invalid }, failed))) {
        throw new JobLetGo('lost');
      }
    }
  } catch (error) {
    if (error instanceof FileProblem) return { failed: error.message };
    throw error;
  }
  const hinted = hint === undefined ? '' : `. ${hint}`;
  if (invalid > 0 && job.on_invalid === 'reject') {
    return {
      failed: `${count(invalid)} of ${count(received)} rows are invalid (results with outcome=failed list them): nothing was written${hinted}`,
    };
  }
  if (invalid > 0 && invalid === received) {
    return {
      failed: `All ${count(received)} rows are invalid (results with outcome=failed list them)${hinted}`,
    };
  }
  return { repeated };
}

/** Which rows a later one replaces, read again from the file (a writing resumed after a restart). */
export async function findRepeats(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<RepeatedKeys> {
  const { db } = context;
  const blocks = checkedBlocks(context, job, resource, 0);
  const repeated = new RepeatedKeys(job.bytes);
  for await (const { rows, checked } of blocks) {
    for (let at = 0; at < rows.length; at++) {
      const values = checked.values[at];
      if (values) repeated.add(keyOf(resource.keyPositions, values), rows[at]!.line);
    }
    if (!(await renewJob(db, job.id, context.holder, context.leaseSeconds))) throw new JobLetGo('lost');
  }
  return repeated;
}
