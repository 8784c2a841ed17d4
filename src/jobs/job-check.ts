import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FieldError } from '../batch/batch-errors.js';
import { referenceFailure, unknownKeys } from '../batch/references.js';
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
import { checkedChunks } from './checked-chunks.js';
import type { CheckedChunk } from './chunk-check.js';
import { delimiterHint } from './delimiter-hint.js';
import { FailedLines } from './failed-lines.js';
import { BLOCK_ROWS } from './file-blocks.js';
import { JobLetGo, type JobRunContext, YIELD_ROWS } from './job-run-context.js';
import { textAt } from './joined-texts.js';
import { RepeatedKeys } from './repeated-keys.js';

/*
 * The first stage of a job run: its file checked by the batch's rules (src/batch/check-block.ts), in
 * chunks in worker threads (src/jobs/checked-chunks.ts), the whole file before anything is written
 * (state validating), the rows that pass copied into the job's staging tables as the check goes, for
 * the writing (src/sql/job-staging.ts); and copied again the same way if that copy is lost.
 */

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
 * The check of the whole file (state validating): every row by its batch's rules, in worker threads
 * (src/jobs/checked-chunks.ts), the reference rule here (a query a chunk); the invalid ones kept as
 * results as they are found, the counts as they grow, and the valid rows copied into the job's
 * staging tables (unless the job already fails: on_invalid=reject with a row invalid). The verdict:
 * the message the job fails with, if it does.
 */
export async function checkFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<{ failed?: string }> {
  const { db, holder, leaseSeconds } = context;
  const repeated = new RepeatedKeys(job.bytes);
  if (!(await startValidation(db, job.id, holder, leaseSeconds))) throw new JobLetGo('lost');
  await createStaging(db, job.id, resource);
  const copy = new StagingCopy(context, job, resource);
  let received = 0;
  let invalid = 0;
  const stages = () => !(job.on_invalid === 'reject' && invalid > 0);
  // Read from the first invalid row: a header read with the wrong delimiter makes every row invalid alike.
  let hint: string | undefined;
  // The referred keys found by earlier chunks, not asked for again.
  const knownReferences = new Set<string>();
  // What the next copy sends: the rows of the chunks checked since the last one, and their failures.
  let staged = new StagedText(resource);
  let lines: number[] = [];
  let body = '';
  let unsent = false;
  const send = async () => {
    const failed: FailedBlock | undefined =
      lines.length > 0 ? { firstLine: lines[0]!, lines, body } : undefined;
    const counts = { received, invalid };
    const rows = stages() ? staged : new StagedText(resource);
    await copy.send(rows, (tx) => recordValidation(tx, job.id, holder, leaseSeconds, counts, failed));
    staged = new StagedText(resource);
    lines = [];
    body = '';
    unsent = false;
  };
  const fail = (line: number, key: string, errors: FieldError[]) => {
    if (invalid === 0) hint = delimiterHint(job, resource.fieldNames, errors);
    invalid++;
    lines.push(line);
    body += `{"line":${line},"key":${key},"errors":${JSON.stringify(errors)}}\n`;
  };
  let problem: string | undefined;
  try {
    for await (const checked of checkedChunks(context, job, resource, stages)) {
      const staging = stages();
      if (staging) hasKeys(checked);
      const refused = await refusedReferences(context, job, resource, checked, knownReferences);
      // The valid rows the reference rule fails are left out of the staged text.
      const dropped = await rowsInOrder(
        checked,
        ({ at, key, errors }, line) => {
          fail(line, key, refused(at) ? referenceFailure(resource, errors) : errors);
        },
        (v, line) => {
          if (refused(checked.valid[v]!)) {
            fail(line, textAt(checked.validKeyTexts, v), referenceFailure(resource, undefined));
            return true;
          }
          if (staging) noteKey(repeated, checked, v, line);
          return false;
        },
      );
      if (staging) stageChecked(staged, checked, dropped);
      received += checked.lines.length;
      unsent = true;
      if (checked.problem !== undefined) {
        problem = checked.problem;
        break;
      }
      if (copyIsDue(staged, body)) await send();
    }
    if (problem === undefined && unsent) await send();
    await copy.settle();
  } catch (error) {
    await copy.settle().catch(() => {});
    throw error;
  }
  if (problem !== undefined) return { failed: problem };
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
 * A chunk's rows in file order, its failed ones and its valid ones merged, a turn of the event loop
 * every YIELD_ROWS rows: `onFailed` with the failed row's entry and line, `onValid` with the valid
 * row's index among the valid ones and its line. Returns the valid indexes `onValid` answered true
 * for: the rows to leave out of the staged text (stageChecked).
 */
async function rowsInOrder(
  checked: CheckedChunk,
  onFailed: (failed: CheckedChunk['failed'][number], line: number) => void,
  onValid: (v: number, line: number) => boolean,
): Promise<number[]> {
  const { failed, valid, lines } = checked;
  const dropped: number[] = [];
  let nextFailed = 0;
  for (let v = 0; v < valid.length || nextFailed < failed.length; ) {
    if ((v + nextFailed) % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
    if (nextFailed < failed.length && (v === valid.length || failed[nextFailed]!.at < valid[v]!)) {
      const row = failed[nextFailed++]!;
      onFailed(row, lines[row.at]!);
      continue;
    }
    if (onValid(v, lines[valid[v]!]!)) dropped.push(v);
    v++;
  }
  return dropped;
}

/** A valid row's key noted by the repeated keys' filter, and kept exactly when it may repeat one. */
function noteKey(repeated: RepeatedKeys, checked: CheckedChunk, v: number, line: number): void {
  const { keyHashes } = checked;
  if (repeated.note(keyHashes[2 * v]!, keyHashes[2 * v + 1]!)) repeated.keep(textAt(checked.keys, v), line);
}

/**
 * A chunk staged has each valid row's key and hashes (made only when its check was asked to stage):
 * without them the repeated keys would be missed in silence, and rows written twice.
 */
function hasKeys(checked: CheckedChunk): void {
  const { valid, keys, keyHashes } = checked;
  if (keys.ends.length !== valid.length || keyHashes.length !== 2 * valid.length) {
    throw new Error(
      `a chunk staged without its keys: ${keys.ends.length} keys of ${valid.length} valid rows`,
    );
  }
}

/**
 * Whether the reference rule fails a chunk's row (by its index among the chunk's rows): the keys it
 * names asked for in one query (those earlier chunks found, `known`, left out).
 */
async function refusedReferences(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  checked: CheckedChunk,
  known: Set<string>,
): Promise<(at: number) => boolean> {
  if (!resource.reference) return () => false;
  const missing = await unknownKeys(context.db, job.tenant_id, resource, checked.referred, known);
  if (missing.size === 0) return () => false;
  const refused = Uint8Array.from(checked.referred, (key) => (missing.has(key) ? 1 : 0));
  const { referredAt } = checked;
  return (at) => referredAt[at]! >= 0 && refused[referredAt[at]!] === 1;
}

/** A chunk's staged rows added to those the next copy sends, without the `dropped` ones (by valid index). */
function stageChecked(staged: StagedText, checked: CheckedChunk, dropped: readonly number[]): void {
  const { stagedEnds, itemEnds, staged: rows, stagedItems: items } = checked;
  if (stagedEnds.length === 0) return;
  if (dropped.length === 0) {
    staged.addText(rows, items, stagedEnds.length);
    return;
  }
  // Each run of kept rows between two dropped ones.
  let from = 0;
  for (const cut of [...dropped, stagedEnds.length]) {
    if (cut > from) {
      const start = from === 0 ? 0 : stagedEnds[from - 1]!;
      const itemStart = from === 0 ? 0 : itemEnds[from - 1]!;
      staged.addText(
        rows.subarray(start, stagedEnds[cut - 1]),
        items?.subarray(itemStart, itemEnds[cut - 1]),
        cut - from,
      );
    }
    from = cut + 1;
  }
}

/**
 * The job's rows copied again into its staging tables from the file, after `fromLine` (the writing's
 * last block), when the copy of the check was lost (src/sql/job-staging.ts): checked again in the
 * worker threads as the check did, without the rows the check failed (their lines read back from the
 * job's results: src/jobs/failed-lines.ts), the reference rule among them.
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
  const failedLines = new FailedLines(db, job.id);
  let staged = new StagedText(resource);
  try {
    for await (const checked of checkedChunks(context, job, resource, () => true)) {
      // The file was read to its end when checked: a problem now is a bug, never a silent end.
      if (checked.problem !== undefined)
        throw new Error(`job ${job.id}'s file is not readable now: ${checked.problem}`);
      const { lines } = checked;
      if (lines.length === 0 || lines[lines.length - 1]! <= fromLine) continue;
      hasKeys(checked);
      await failedLines.loadThrough(lines[lines.length - 1]!);
      // The valid rows left out: those written or failed.
      const dropped = await rowsInOrder(
        checked,
        (_failed, line) => {
          // Failed when checked; a row that did not is a bug, never a silent skip.
          if (line > fromLine && !failedLines.has(line)) {
            throw new Error(`line ${line} was valid when checked and is not now`);
          }
        },
        (v, line) => {
          if (line <= fromLine || failedLines.has(line)) return true;
          noteKey(repeated, checked, v, line);
          return false;
        },
      );
      stageChecked(staged, checked, dropped);
      if (copyIsDue(staged)) {
        await copy.send(staged, (tx) => renewJob(tx, job.id, holder, leaseSeconds));
        staged = new StagedText(resource);
      }
    }
    if (staged.count > 0) await copy.send(staged, (tx) => renewJob(tx, job.id, holder, leaseSeconds));
    await copy.finish(repeated);
  } finally {
    await copy.settle().catch(() => {});
  }
}
