import { setImmediate as nextTurn } from 'node:timers/promises';
import { answerChecked } from '../batch/answer-batch.js';
import type { BatchAdmission } from '../admission/batch-admission.js';
import { BatchNotAdmitted, type FieldError, type ItemError } from '../batch/batch-errors.js';
import { type CheckedBatch, referencedKeysOf, sentKeyText } from '../batch/checked-batch.js';
import { keyOf, type PreparedWrite, prepareWrite } from '../batch/prepared-write.js';
import { markUnknownReferences, unknownReferences } from '../batch/references.js';
import { validateItems } from '../batch/validate-items.js';
import type { Database } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import {
  type ClaimedJob,
  type FailedBlock,
  finishJob,
  recordValidation,
  recordWritten,
  renewJob,
  startValidation,
  startWriting,
  type WrittenBlock,
} from '../sql/job-runs.js';
import { FailedLines } from './failed-lines.js';
import { FileProblem, type FileRow, fileRows } from './file-rows.js';
import { RepeatedKeys } from './repeated-keys.js';
import { storedBytes, storedFile } from './stored-file.js';

/*
 * One job run (extensions.md 12), from its claim to its end or until it is let go: the check of the
 * whole file by the batch rules (state validating: nothing written, every invalid row listed), then
 * the writing, in file order, a transaction per block of rows that also records the job's progress,
 * so a restart resumes right after the last block committed. The file is read twice rather than held:
 * its size is not bounded, memory is.
 */

/** Rows per transaction of the writing (extensions.md 12: at most 10,000), and per block of the check. */
export const BLOCK_ROWS = 10_000;
/**
 * Characters of file text per block, at most: a block of wide rows (customers of 1 KiB: about 500
 * of them) ends before 10,000 rows. What a block holds at once (its rows, their values, the
 * statement's parameters) is several times its text, and V8 lets the heap grow with it: on 50,000
 * customers of 1 KiB the server's RSS grew 347 MB with blocks of 4 MiB, 202 MB with 1 MiB and 127 MB
 * with 512 KiB; in `npm run bench:jobs`, 1,000 MiB of customers grew it 259 MB with 1 MiB (the
 * issue's bar: 256 MB), and 218 MB with 512 KiB and two blocks held at once (the writing's look-ahead). Rows of prices (25-50 bytes) still make blocks of 10,000.
 */
export const BLOCK_CHARS = 512 * 1024;

/**
 * Items validated between two turns of the event loop: short enough for other requests, and far below
 * the cap of problems validation keeps (250 items of at most 101 problems each).
 */
const CHECK_SLICE = 250;

/**
 * Rows of a block's other per-row work (keys, results) between two turns of the event loop: a block
 * of 10,000 rows in one stretch held other requests for 10-20 ms at a time.
 */
const YIELD_ROWS = 1_000;

export interface JobRunContext {
  db: Database;
  holder: string;
  leaseSeconds: number;
  /** The writing's transactions take places like batch uploads, so jobs and batches share fairly. */
  admission: BatchAdmission;
  /** True while the process answers requests: the writing then makes one block ready at a time. */
  serving(): boolean;
  /** True once the server closes: the run stops after its current block, and the job is let go. */
  stopping(): boolean;
  /** Rows written, for the metrics. */
  wroteRows(resource: string, rows: number): void;
}

/** The job is no longer this run's (taken over, aborted) or the server closes: stop, change nothing more. */
export class JobLetGo extends Error {
  constructor(readonly why: 'lost' | 'stopping') {
    super(why === 'lost' ? 'the job is no longer held by this instance' : 'the server is closing');
    this.name = 'JobLetGo';
  }
}

/** A block of the file's rows checked: per row its problems, or its normalised values. */
interface CheckedRows {
  errors: (FieldError[] | undefined)[];
  values: (FieldValue[] | undefined)[];
}

/** The rows checked by the batch rules of the resource, its reference included (one query a block). */
async function checkRows(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  rows: readonly FileRow[],
  references: boolean,
): Promise<CheckedRows> {
  const errors: CheckedRows['errors'] = new Array(rows.length);
  const values: CheckedRows['values'] = new Array(rows.length);
  const partial: (FieldValue[] | undefined)[] = new Array(rows.length);
  const itemErrors: ItemError[] = [];
  for (let start = 0; start < rows.length; start += CHECK_SLICE) {
    const slice = rows.slice(start, start + CHECK_SLICE);
    const checked = validateItems(
      resource,
      slice.map((row) => (row.problem === undefined ? row.item : {})),
      true,
    );
    const byIndex = new Map(checked.errors.map((error) => [error.index, error.errors]));
    for (let at = 0; at < slice.length; at++) {
      const index = start + at;
      const problem = slice[at]!.problem;
      if (problem !== undefined) {
        itemErrors.push({ index, errors: [{ field: null, message: problem }] });
      } else if (checked.invalid![at]) {
        itemErrors.push({ index, errors: byIndex.get(at) ?? [] });
        partial[index] = checked.rows[at];
      } else {
        partial[index] = checked.rows[at];
      }
    }
    await nextTurn();
  }
  if (references && resource.reference) {
    const batch = { rows: partial, errors: itemErrors };
    const missing = await unknownReferences(db, tenantId, resource, batch);
    markUnknownReferences(resource, batch, missing);
  }
  for (const error of itemErrors) errors[error.index] = error.errors;
  for (let at = 0; at < rows.length; at++) if (!errors[at]) values[at] = partial[at];
  return { errors, values };
}

/** A row's key as sent, for its result line. */
function keyText(resource: BatchResource, item: unknown): string {
  return typeof item === 'object' && item !== null && !Array.isArray(item)
    ? sentKeyText(resource, item as Record<string, unknown>)
    : '{}';
}

const count = (n: number) => n.toLocaleString('en-US');

/** Runs the claimed job until it ends; throws JobLetGo when it is let go before. */
export async function runJob(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
): Promise<void> {
  const fileBytes = await storedBytes(context.db, job.id);
  let repeated: RepeatedKeys | undefined;
  if (job.state === 'validating') {
    const verdict = await checkFile(context, job, resource, fileBytes);
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
    repeated = await findRepeats(context, job, resource, fileBytes);
  }
  await writeFile(context, job, resource, repeated);
  if (!(await finishJob(context.db, job.id, context.holder, 'succeeded', null))) throw new JobLetGo('lost');
}

/** The file's rows in blocks of BLOCK_ROWS (the last one shorter). */
async function* blocksOf(runs: AsyncIterable<FileRow[]>): AsyncGenerator<FileRow[]> {
  let block: FileRow[] = [];
  let chars = 0;
  for await (const run of runs) {
    for (const row of run) {
      block.push(row);
      chars += row.chars;
      if (block.length === BLOCK_ROWS || chars >= BLOCK_CHARS) {
        yield block;
        block = [];
        chars = 0;
      }
    }
  }
  if (block.length > 0) yield block;
}

function rowsOf(context: JobRunContext, job: ClaimedJob, resource: BatchResource): AsyncGenerator<FileRow[]> {
  return fileRows(storedFile(context.db, job.id), {
    format: job.format,
    delimiter: job.delimiter,
    fieldNames: resource.fieldNames,
    maxRowChars: Math.max(1024 * 1024, resource.maxItemBytes + 1024),
  });
}

function checkStopping(context: JobRunContext): void {
  if (context.stopping()) throw new JobLetGo('stopping');
}

/**
 * The check of the whole file (state validating): every row by its batch's rules, the invalid ones
 * kept as results as they are found, the counts as they grow. The verdict: the message the job fails
 * with, or, for an upsert, which rows a later one replaces.
 */
async function checkFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  fileBytes: number,
): Promise<{ failed?: string; repeated?: RepeatedKeys | undefined }> {
  const { db, holder, leaseSeconds } = context;
  if (!(await startValidation(db, job.id, holder, leaseSeconds))) throw new JobLetGo('lost');
  const repeated = resource.onExisting === 'update' ? new RepeatedKeys(fileBytes) : undefined;
  let received = 0;
  let invalid = 0;
  try {
    for await (const block of blocksOf(rowsOf(context, job, resource))) {
      checkStopping(context);
      const checked = await checkRows(db, job.tenant_id, resource, block, true);
      const lines: number[] = [];
      let body = '';
      for (let at = 0; at < block.length; at++) {
        if (at % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
        const row = block[at]!;
        const errors = checked.errors[at];
        if (errors) {
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
  if (invalid > 0 && job.on_invalid === 'reject') {
    return {
      failed: `${count(invalid)} of ${count(received)} rows are invalid (results with outcome=failed list them): nothing was written`,
    };
  }
  if (invalid > 0 && invalid === received) {
    return { failed: `All ${count(received)} rows are invalid (results with outcome=failed list them)` };
  }
  return { repeated };
}

/** Which rows a later one replaces, read again from the file (a writing resumed after a restart). */
async function findRepeats(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  fileBytes: number,
): Promise<RepeatedKeys> {
  const repeated = new RepeatedKeys(fileBytes);
  const failed = new FailedLines(context.db, job.id);
  for await (const block of blocksOf(rowsOf(context, job, resource))) {
    checkStopping(context);
    await failed.loadThrough(block.at(-1)!.line);
    const checked = await checkRows(context.db, job.tenant_id, resource, block, false);
    for (let at = 0; at < block.length; at++) {
      const values = checked.values[at];
      if (values && !failed.has(block[at]!.line))
        repeated.add(keyOf(resource.keyPositions, values), block[at]!.line);
    }
    if (!(await renewJob(context.db, job.id, context.holder, context.leaseSeconds)))
      throw new JobLetGo('lost');
  }
  return repeated;
}

/** One result line of the writing. */
interface Outcome {
  line: number;
  outcome: 'created' | 'updated' | 'ignored';
  key: string;
}

/**
 * A block of the writing made ready before its transaction: its rows checked again and split into
 * those written (with the write statement's parameters built) and those a later row replaces.
 */
interface ReadyBlock {
  /** The rows the statement writes: their values, their lines, their keys as sent. */
  values: FieldValue[][];
  lines: number[];
  keyTexts: string[];
  write: PreparedWrite | undefined;
  /** Rows left out, each with its result: ignored, a later row of the file replaces it. */
  outcomes: Outcome[];
  /** The block's last line: the job's progress once it commits. */
  toLine: number;
}

/** The blocks of the writing from the line after `fromLine`, each made ready (see ReadyBlock). */
async function* readyBlocks(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  repeated: RepeatedKeys | undefined,
  fromLine: number,
): AsyncGenerator<ReadyBlock> {
  const failed = new FailedLines(context.db, job.id);
  for await (const all of blocksOf(rowsOf(context, job, resource))) {
    checkStopping(context);
    const block = all[all.length - 1]!.line <= fromLine ? [] : all.filter((row) => row.line > fromLine);
    if (block.length === 0) continue;
    await failed.loadThrough(block.at(-1)!.line);
    const kept = block.filter((row) => !failed.has(row.line));
    const checked = await checkRows(context.db, job.tenant_id, resource, kept, false);
    const ready: ReadyBlock = {
      values: [],
      lines: [],
      keyTexts: [],
      write: undefined,
      outcomes: [],
      toLine: block.at(-1)!.line,
    };
    for (let at = 0; at < kept.length; at++) {
      if (at % YIELD_ROWS === YIELD_ROWS - 1) await nextTurn();
      const row = kept[at]!;
      const rowValues = checked.values[at];
      // Valid when checked before; a row that is not now is a bug, never a silent skip.
      if (!rowValues) throw new Error(`line ${row.line} was valid when checked and is not now`);
      const key = keyText(resource, row.item);
      if (repeated?.replacedLater(keyOf(resource.keyPositions, rowValues), row.line)) {
        ready.outcomes.push({ line: row.line, outcome: 'ignored', key });
        continue;
      }
      ready.values.push(rowValues);
      ready.lines.push(row.line);
      ready.keyTexts.push(key);
    }
    if (ready.values.length > 0) {
      await nextTurn();
      ready.write = prepareWrite(resource, ready.values, context.db.statementRows);
    }
    yield ready;
  }
}

/**
 * The writing (state writing): from the line after the last block committed to the file's end. While
 * the process answers nothing else, the next block is read, checked and made ready while one is
 * written (JavaScript work, while the transaction mostly waits for the database): a lone job then
 * uses both the process and the database. While it answers requests, one block at a time, leaving
 * the CPU to them: looking ahead beside another tenant's batches raised their p99 by 40-50 ms
 * (docs/decisions/0096-job-lookahead-when-alone.md).
 */
async function writeFile(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  repeated: RepeatedKeys | undefined,
): Promise<void> {
  let fromLine = job.written_line;
  const blocks = readyBlocks(context, job, resource, repeated, fromLine);
  try {
    let ahead: Promise<IteratorResult<ReadyBlock>> | undefined;
    for (;;) {
      const current = await (ahead ?? blocks.next());
      ahead = undefined;
      if (current.done) break;
      checkStopping(context);
      if (!context.serving()) {
        ahead = blocks.next();
        // Reported by the await above once this block is written; never unhandled if that fails.
        ahead.catch(() => {});
      }
      await writeBlock(context, job, resource, current.value, fromLine);
      fromLine = current.value.toLine;
    }
  } finally {
    // Ends the reading (a look-ahead under way first); its own failure never hides the run's error.
    await blocks.return(undefined).catch(() => {});
  }
}

/**
 * One transaction of the writing: the block's rows by the batch's own write (its statement, its
 * counts, its per-item outcomes), the results, and the job's progress, which only this holder moves,
 * and only from where it stood: a block is never written twice.
 */
async function writeBlock(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  ready: ReadyBlock,
  fromLine: number,
): Promise<void> {
  const { db } = context;
  const { write, values, lines, keyTexts, outcomes, toLine } = ready;
  const checked: CheckedBatch | undefined = write && {
    items: values.length,
    errors: [],
    referencedKeys: referencedKeysOf(resource, values),
    keyTexts,
    write,
  };
  const transaction = async () =>
    db.transaction(async (tx) => {
      const block: WrittenBlock = { toLine, created: 0, updated: 0, ignored: 0, results: [] };
      const all = [...outcomes];
      let written: readonly { table: string; rows: number }[] = [];
      if (checked) {
        const options = { outcomes: true, dryRun: false, skipInvalid: false };
        const result = await answerChecked({ db, tx }, job.tenant_id, resource, checked, options);
        if (result.kind !== 'done') throw new Error('a block of rows checked valid was refused at its write');
        block.created = result.counts.created;
        block.updated = result.counts.updated;
        block.ignored = result.counts.ignored;
        written = result.written ?? [];
        for (const item of JSON.parse(result.itemsText!) as {
          index: number;
          outcome: Outcome['outcome'];
        }[]) {
          all.push({ line: lines[item.index]!, outcome: item.outcome, key: keyTexts[item.index]! });
        }
      }
      block.ignored += outcomes.length;
      await nextTurn();
      all.sort((a, b) => a.line - b.line);
      const bodies = new Map<Outcome['outcome'], { firstLine: number; body: string }>();
      for (const { line, outcome, key } of all) {
        const entry = bodies.get(outcome) ?? { firstLine: line, body: '' };
        entry.body += `{"line":${line},"key":${key}}\n`;
        bodies.set(outcome, entry);
      }
      block.results = [...bodies].map(([outcome, entry]) => ({ outcome, ...entry }));
      if (!(await recordWritten(tx, job.id, context.holder, context.leaseSeconds, fromLine, block))) {
        throw new JobLetGo('lost');
      }
      return written;
    });
  const written = checked ? await inTurn(context, job.tenant_id, resource, transaction) : await transaction();
  for (const { table, rows: changed } of written) await db.wrote(table, changed);
  if (write) context.wroteRows(resource.name, values.length);
}

/** A block's transaction in a place of the batch admission, waiting (a little at a time) for one. */
async function inTurn<T>(
  context: JobRunContext,
  tenantId: number,
  resource: BatchResource,
  work: () => Promise<T>,
): Promise<T> {
  for (;;) {
    checkStopping(context);
    let ticket: ReturnType<BatchAdmission['enter']>;
    try {
      ticket = context.admission.enter(tenantId, resource.bodyLimit);
      await ticket.admitted;
    } catch (error) {
      if (!(error instanceof BatchNotAdmitted)) throw error;
      // The tenant's own batches fill its places: the job waits its turn behind them.
      await new Promise((done) => setTimeout(done, 50));
      continue;
    }
    try {
      return await ticket.run(work);
    } finally {
      ticket.closed();
    }
  }
}
