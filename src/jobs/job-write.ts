import { setImmediate as nextTurn } from 'node:timers/promises';
import { inTurn } from '../admission/batch-admission.js';
import { type CheckedBatch, checkedRows, keyOf } from '../batch/check-block.js';
import { answerChecked } from '../batch/write-block.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { type ClaimedJob, recordWritten, type WrittenBlock } from '../sql/job-runs.js';
import { checkedBlocks, keyText } from './job-check.js';
import { checkStopping, JobLetGo, type JobRunContext, YIELD_ROWS } from './job-run-context.js';
import type { RepeatedKeys } from './repeated-keys.js';

/*
 * The last stage of a job run (state writing): in file order, a transaction per block of rows by the
 * batch's own write (src/batch/write-block.ts) that also records the job's progress, so a restart
 * resumes right after the last block committed.
 */

/** One result line of the writing. */
interface Outcome {
  line: number;
  outcome: 'created' | 'updated' | 'ignored';
  key: string;
}

/**
 * A block of the writing made ready before its transaction: its rows checked again and split into
 * those written (a checked batch, its statement's parameters built) and those a later row replaces.
 */
interface ReadyBlock {
  /** The rows the statement writes, their keys as sent kept for their outcomes; absent: none. */
  checked: CheckedBatch | undefined;
  /** Per row written, its line. */
  lines: number[];
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
  for await (const { rows: kept, toLine, checked } of checkedBlocks(context, job, resource, fromLine)) {
    const values: FieldValue[][] = [];
    const keyTexts: string[] = [];
    const ready: ReadyBlock = { checked: undefined, lines: [], outcomes: [], toLine };
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
      values.push(rowValues);
      ready.lines.push(row.line);
      keyTexts.push(key);
    }
    if (values.length > 0) {
      await nextTurn();
      ready.checked = checkedRows(resource, values, keyTexts, context.db.statementRows);
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
 * (docs/performance.md, "Bulk jobs").
 */
export async function writeFile(
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
  const { checked, lines, outcomes, toLine } = ready;
  const transaction = async () => {
    // The lease found another's while the block waited for its place: not even tried (its record
    // would refuse it all the same, after writing and rolling back the rows).
    if (context.lost()) throw new JobLetGo('lost');
    return db.transaction(async (tx) => {
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
          all.push({ line: lines[item.index]!, outcome: item.outcome, key: checked.keyTexts![item.index]! });
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
  };
  const written = checked
    ? await inTurn(
        context.admission,
        job.tenant_id,
        resource.bodyLimit,
        () => checkStopping(context),
        transaction,
        context.lostSignal,
      )
    : await transaction();
  for (const { table, rows: changed } of written) await db.wrote(table, changed);
  if (checked) context.wroteRows(resource.name, checked.items);
}
