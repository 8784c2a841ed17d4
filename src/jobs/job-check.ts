import { setImmediate as nextTurn } from 'node:timers/promises';
import { type CheckedRows, checkRows, keyOf, sentKeyText } from '../batch/check-block.js';
import type { Transaction } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import {
  type ClaimedJob,
  type FailedBlock,
  recordValidation,
  renewJob,
  startValidation,
} from '../sql/job-runs.js';
import { createStaging, markReplaced, markStaged, StagedText, stageRows } from '../sql/job-staging.js';
import { delimiterHint } from './delimiter-hint.js';
import { BLOCK_ROWS, type KeptBlock, keptBlocks } from './file-blocks.js';
import { FileProblem, type FileRow, itemOf } from './file-rows.js';
import { checkStopping, JobLetGo, type JobRunContext, YIELD_ROWS } from './job-run-context.js';
import { RepeatedKeys } from './repeated-keys.js';

/*
 * The second stage of a job run: its blocks checked by the batch's rules (src/batch/check-block.ts),
 * the whole file before anything is written (state validating), the rows that pass copied into the
 * job's staging tables as the check goes, for the writing (src/sql/job-staging.ts).
 */

/** A block of the file's rows as a pass reads it: checked by the batch rules. */
export interface CheckedBlock extends KeptBlock {
  checked: CheckedRows;
}

/**
 * The file's blocks from the line after `fromLine`, each checked: what every pass of a run reads.
 * Validating: every row, the reference rule included (one query a block). Writing (its rows staged
 * again): without the rows the check found invalid, and without the reference rule, which they
 * passed then.
 */
export async function* checkedBlocks(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  fromLine: number,
): AsyncGenerator<CheckedBlock> {
  const validating = job.state === 'validating';
  // The referred keys found by earlier blocks of this pass, not asked for again.
  const knownReferences = new Set<string>();
  for await (const { rows, toLine } of keptBlocks(context.db, job, resource, fromLine, !validating)) {
    checkStopping(context);
    const checked = await checkRows(context.db, job.tenant_id, resource, rows, validating, knownReferences);
    yield { rows, toLine, checked };
  }
}

/** A row's key as sent, for its result line. */
export function keyText(resource: BatchResource, row: FileRow): string {
  const item = itemOf(row, resource.key);
  return typeof item === 'object' && item !== null && !Array.isArray(item)
    ? sentKeyText(resource, item as Record<string, unknown>)
    : '{}';
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Bytes of COPY text (or of failed rows' results) a copy sends at most, about: the check's blocks are
 * smaller (src/jobs/file-blocks.ts), and a copy gathers several (up to about BLOCK_ROWS rows), so
 * that the transactions that send them stay few whatever the size of the blocks.
 */
const COPY_BYTES = 1024 * 1024;

/** The rows (and failed rows' results) gathered since the last copy are enough for one. */
function copyIsDue(staged: StagedText, failedBody = ''): boolean {
  return (
    staged.count >= BLOCK_ROWS || staged.rows.byteLength >= COPY_BYTES || failedBody.length >= COPY_BYTES
  );
}

/**
 * Copies checked rows into the job's staging tables (src/sql/job-staging.ts), a transaction per send
 * (the rows of one or more blocks) that also records the pass's progress, sent while the next block
 * is read and checked: the check's JavaScript and PostgreSQL's COPY overlap. One transaction at a
 * time, in block order.
 */
class StagingCopy {
  #pending: Promise<void> | undefined;

  constructor(
    readonly context: JobRunContext,
    readonly job: ClaimedJob,
    readonly resource: BatchResource,
  ) {}

  /**
   * Sends the rows, and `record` in the same transaction (false: the job is no longer this holder's),
   * once the block before committed. A failure is thrown by the next call (or by settle).
   */
  async send(rows: StagedText, record: (tx: Transaction) => Promise<boolean>): Promise<void> {
    await this.#pending;
    const { db } = this.context;
    const sent = db.transaction(async (tx) => {
      await stageRows(tx, this.job.id, rows);
      if (!(await record(tx))) throw new JobLetGo('lost');
    });
    // Reported by the next await of it; never unhandled meanwhile.
    sent.catch(() => {});
    this.#pending = sent;
  }

  /** Waits for the last block sent; throws its failure. */
  async settle(): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    await pending;
  }

  /** The copy is complete: the rows another one replaces marked, then the mark the writing looks for. */
  async finish(repeated: RepeatedKeys): Promise<void> {
    await this.settle();
    const { db } = this.context;
    await markReplaced(db, this.job.id, this.resource, repeated.repeatedLines());
    await markStaged(db, this.job.id);
  }
}

/**
 * The check of the whole file (state validating): every row by its batch's rules, the invalid ones
 * kept as results as they are found, the counts as they grow, and the valid rows copied into the job's
 * staging tables (unless the job already fails: on_invalid=reject with a row invalid). The verdict:
 * the message the job fails with, if it does.
 */
export async function checkFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<{ failed?: string }> {
  const { db, holder, leaseSeconds } = context;
  // A generator reads nothing until it is iterated: the first block is read after the start below.
  const blocks = checkedBlocks(context, job, resource, 0);
  const repeated = new RepeatedKeys(job.bytes);
  if (!(await startValidation(db, job.id, holder, leaseSeconds))) throw new JobLetGo('lost');
  await createStaging(db, job.id, resource);
  const copy = new StagingCopy(context, job, resource);
  let received = 0;
  let invalid = 0;
  // Read from the first invalid row: a header read with the wrong delimiter makes every row invalid alike.
  let hint: string | undefined;
  // What the next copy sends: the rows of the blocks checked since the last one, and their failures.
  let staged = new StagedText(resource);
  let lines: number[] = [];
  let body = '';
  let unsent = false;
  const send = async () => {
    const failed: FailedBlock | undefined =
      lines.length > 0 ? { firstLine: lines[0]!, lines, body } : undefined;
    const counts = { received, invalid };
    const rows = invalid > 0 && job.on_invalid === 'reject' ? new StagedText(resource) : staged;
    await copy.send(rows, (tx) => recordValidation(tx, job.id, holder, leaseSeconds, counts, failed));
    staged = new StagedText(resource);
    lines = [];
    body = '';
    unsent = false;
  };
  try {
    for await (const { rows: block, checked } of blocks) {
      const stages = !(job.on_invalid === 'reject' && invalid > 0);
      for (let at = 0; at < block.length; at++) {
        if (at % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
        const row = block[at]!;
        const errors = checked.errors[at];
        if (errors) {
          if (invalid === 0) hint = delimiterHint(job, resource.fieldNames, errors);
          invalid++;
          lines.push(row.line);
          body += `{"line":${row.line},"key":${keyText(resource, row)},"errors":${JSON.stringify(errors)}}\n`;
        } else if (stages) {
          const values = checked.values[at]!;
          staged.add(row.line, keyText(resource, row), values);
          repeated.add(keyOf(resource.keyPositions, values), row.line);
        }
      }
      received += block.length;
      unsent = true;
      if (copyIsDue(staged, body)) await send();
    }
    if (unsent) await send();
    await copy.settle();
  } catch (error) {
    await copy.settle().catch(() => {});
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
  await copy.finish(repeated);
  return {};
}

/**
 * The job's rows copied again into its staging tables from the file, after `fromLine` (the writing's
 * last block), when the copy of the check was lost (src/sql/job-staging.ts): the rows the check
 * passed, by the same rules, the reference rule left out (they passed it then).
 */
export async function stageFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  fromLine: number,
): Promise<void> {
  const { db, holder, leaseSeconds } = context;
  await createStaging(db, job.id, resource);
  const repeated = new RepeatedKeys(job.bytes);
  const copy = new StagingCopy(context, job, resource);
  const send = (staged: StagedText) => copy.send(staged, (tx) => renewJob(tx, job.id, holder, leaseSeconds));
  let staged = new StagedText(resource);
  try {
    for await (const { rows, checked } of checkedBlocks(context, job, resource, fromLine)) {
      for (let at = 0; at < rows.length; at++) {
        if (at % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
        const row = rows[at]!;
        const values = checked.values[at];
        // Valid when checked before; a row that is not now is a bug, never a silent skip.
        if (!values) throw new Error(`line ${row.line} was valid when checked and is not now`);
        staged.add(row.line, keyText(resource, row), values);
        repeated.add(keyOf(resource.keyPositions, values), row.line);
      }
      if (copyIsDue(staged)) {
        await send(staged);
        staged = new StagedText(resource);
      }
    }
    if (staged.count > 0) await send(staged);
    await copy.finish(repeated);
  } finally {
    await copy.settle().catch(() => {});
  }
}
