import { type Database, type Queryable, type Transaction, withRetry } from '../db/database.js';
import { batchCounts, numbers } from '../resources/batch-counts.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { type ActivityRecord, recordActivity, type WriteActivity } from '../sql/activity.js';
import { isMissingReferences, type RecordedBy, runBatchWrite, writeStatement } from '../sql/batch-write.js';
import type { ItemError } from './batch-errors.js';
import { type BatchOptions, NO_OPTIONS } from './batch-options.js';
import { checkItems } from './check-block.js';
import type { CheckedBatch } from './checked.js';
import { itemOutcomesText } from './item-outcomes.js';
import type { PreparedWrite } from './prepared-write.js';
import { referenceRows, refuseUnknownReferences, skippedReferences } from './references.js';
import type { ValidatedBatch } from './validate-items.js';

/*
 * The write of a checked block, the second face of a write (src/batch/check-block.ts is the first):
 * the statement, the counts, the per-item outcomes, and the 400 of a block that names unknown
 * references.
 */

/** How many items are invalid (without on_invalid=skip: nonzero exactly when one is). */
export function invalidCount(checked: CheckedBatch): number {
  if (!checked.invalid) return checked.errors.length;
  let count = 0;
  for (const flag of checked.invalid) count += flag;
  return count;
}

/** What a written batch did, every item counted once: created, updated, or ignored (a repeat, or an existing key). */
export interface BatchCounts {
  created: number;
  updated: number;
  ignored: number;
}

/**
 * Where a batch writes: through its own statement or transaction on db, or inside the transaction of
 * a keyed request (tx), which also keeps its answer (src/idempotency/answer-once.ts).
 */
export interface WriteTarget {
  db: Database;
  tx?: Transaction | undefined;
  /**
   * The request's activity row as it stands when the write is sent (a request without a key, on db):
   * recorded by the write itself, so that it commits with the write or not at all
   * (docs/decisions/0148-activity-and-overview.md). The result says whether it was (`recorded`): a
   * dry run or a refusal writes nothing, and its request is recorded after its answer.
   */
  activity?: (() => WriteActivity) | undefined;
}

/** What a batch came to: refused with its problems (400), or counted (and written unless a dry run). */
export type BatchResult =
  | { kind: 'invalid'; errors: ItemError[] }
  | {
      kind: 'done';
      counts: BatchCounts;
      /** on_invalid=skip: the items left out and their problems, in the 400's shape. */
      rejected?: { count: number; errors: ItemError[] } | undefined;
      /** outcomes=true: the items array as JSON text. */
      itemsText?: string | undefined;
      /** The rows each table changed, for the database's upkeep (Database.wrote); absent for a dry run. */
      written?: readonly { table: string; rows: number }[] | undefined;
      /** WriteTarget.activity was recorded with the write, which committed. */
      recorded?: boolean;
    };

/** The 400 of an invalid batch: its problems and, in the same list, the unknown references it names. */
async function refuse(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  batch: ValidatedBatch,
): Promise<BatchResult> {
  await refuseUnknownReferences(q, tenantId, resource, batch);
  return { kind: 'invalid', errors: batch.errors };
}

/** Thrown to roll back a dry run's transaction, carrying what its statements answered. */
class DryRunDone {
  constructor(readonly result: Written) {}
}

interface Written {
  created: number;
  /** Positions (among the distinct rows) of the rows inserted; filled for outcomes only. */
  inserted: number[];
  /** The request's activity row was written with the rows. */
  recorded?: boolean;
}

/** Runs the write's statements on q; `recorded`: the request its one statement records too. */
type Run = (q: Queryable, recorded?: RecordedBy) => Promise<Written>;

/** The request's activity row to record with a write: in its statement, or as a row of its own. */
interface Recording {
  by: RecordedBy;
  row(created: number): ActivityRecord;
}

/**
 * Runs the write. Inside a keyed request's transaction, a dry run or a write that may fail on a
 * reference runs under a savepoint: the dry run is undone, the failure leaves the transaction usable
 * for the 400 that is kept. On its own: one statement (atomic, a failure included; retried on
 * deadlock), several in one transaction (PGlite's chunks), a dry run in a transaction that is rolled
 * back. The request's activity row (WriteTarget.activity) goes with the write: in its one statement
 * (one round trip, as a batch cost before it was recorded), or last in the transaction of its chunks.
 */
async function execute(
  target: WriteTarget,
  run: Run,
  recording: Recording | undefined,
  dryRun: boolean,
  mayFail: boolean,
  statementCount: number,
): Promise<Written> {
  const { db, tx } = target;
  if (tx) {
    if (!dryRun && !mayFail) return run(tx);
    return tx.savepoint(() => run(tx), { undo: dryRun });
  }
  if (dryRun) {
    try {
      await db.transaction(async (t) => {
        throw new DryRunDone(await run(t));
      });
    } catch (error) {
      if (error instanceof DryRunDone) return error.result;
      throw error;
    }
  }
  if (statementCount > 1) {
    return db.transaction(async (t) => {
      const written = await run(t);
      if (recording) await recordActivity(t, recording.row(written.created));
      return { ...written, recorded: recording !== undefined };
    });
  }
  return withRetry(() => run(db, recording?.by));
}

/**
 * The batch pipeline after the check: an invalid batch is refused (with its unknown references), a
 * valid one written with one statement (or the valid items of a skipped one), and counted. Unknown
 * references are found by the write statement itself, which then fails whole, so a valid batch costs
 * no extra round trip; only a batch that names one, or has invalid items, pays the query that names
 * them. on_invalid=skip with a reference pays it first: those items are rejected, and the statement
 * leaves them out.
 */
export async function answerChecked(
  target: WriteTarget,
  tenantId: number,
  resource: BatchResource,
  checked: CheckedBatch,
  options: BatchOptions,
): Promise<BatchResult> {
  const q = target.tx ?? target.db;
  const prepared = checked.write;
  const skip = checked.invalid !== undefined;
  const invalidItems = skip ? invalidCount(checked) : 0;
  if (!prepared)
    return refuse(q, tenantId, resource, { rows: referenceRows(resource, checked), errors: checked.errors });
  let rejectedItems = invalidItems;
  let rejectedErrors = checked.errors;
  // Per item: 1 when its reference is unknown (on_invalid=skip only), and those references.
  let unknown: Uint8Array | undefined;
  let leftOutKeys: string[] | undefined;
  if (skip && resource.reference) {
    const skipped = await skippedReferences(q, tenantId, resource, checked, rejectedItems);
    if (skipped && 'refused' in skipped) return { kind: 'invalid', errors: skipped.refused };
    if (skipped) {
      unknown = skipped.unknown;
      rejectedErrors = skipped.errors;
      rejectedItems += skipped.count;
      leftOutKeys = skipped.keys;
    }
  }

  // Items and distinct rows whose reference is unknown are left out of the statement.
  let leftOutItems = 0;
  let leftOutRows = 0;
  if (unknown) {
    for (let d = 0; d < prepared.distinct; d++) leftOutRows += unknown[prepared.rowItems?.[d] ?? d]!;
    leftOutItems = rejectedItems - invalidItems;
  }
  const items = prepared.items - leftOutItems;
  const distinct = prepared.distinct - leftOutRows;
  const countsOf = (created: number): BatchCounts =>
    batchCounts(resource.onExisting, created, items, distinct, numbers);

  const { chunks, chunkRows } = prepared;
  // A dry run writes nothing, so it records nothing with its write (its request is recorded after
  // its answer, as a refusal is).
  const activity = options.dryRun || target.tx ? undefined : target.activity;
  // The statement leaves out exactly the rows rejected here, even if one of their references is
  // added meanwhile: the answer's counts and outcomes match what was written.
  const sql = writeStatement(resource, {
    outcomes: options.outcomes,
    leaveOutReferences: leftOutKeys !== undefined,
    recordsActivity: activity !== undefined && chunks.length === 1,
  });
  const run: Run = async (on, recorded) => {
    let created = 0;
    const inserted: number[] = [];
    for (let c = 0; c < chunks.length; c++) {
      const row = await runBatchWrite(on, sql, tenantId, chunks[c]!, leftOutKeys, recorded);
      created += row.created;
      for (const n of row.inserted ?? []) inserted.push(c * chunkRows + n - 1);
    }
    return { created, inserted, recorded: recorded !== undefined };
  };
  // A write that leaves out every missing reference found just before cannot name one (referred rows
  // are never deleted): it needs no savepoint.
  const mayFail = resource.reference !== undefined && leftOutKeys === undefined;
  let written: Written | undefined;
  for (let attempt = 1; written === undefined; attempt++) {
    // The row as it stands when the write is sent: its duration so far.
    const row = activity?.();
    const recording: Recording | undefined = row && {
      by: { activity: row, items, distinct },
      row: (created) => ({ ...row, items, ...countsOf(created) }),
    };
    try {
      written = await execute(target, run, recording, options.dryRun, mayFail, chunks.length);
    } catch (error) {
      if (!isMissingReferences(error)) throw error;
      const answer = await refuse(q, tenantId, resource, {
        rows: referenceRows(resource, checked),
        errors: [...checked.errors],
      });
      if (answer.kind === 'invalid' && answer.errors.length > 0) return answer;
      // Nothing is missing now: the referred row was committed between the write's snapshot and
      // this query (referred rows are only ever added), so the batch is valid. Written again, once.
      if (attempt === 2) throw error;
    }
  }

  const counts = countsOf(written.created);
  const changed = options.dryRun ? undefined : changedRows(resource, prepared, counts);
  return {
    kind: 'done',
    counts,
    rejected: skip ? { count: rejectedItems, errors: rejectedErrors } : undefined,
    itemsText: options.outcomes
      ? itemOutcomesText(checked, prepared, written.inserted, resource.onExisting === 'update', unknown)
      : undefined,
    written: changed,
    recorded: written.recorded === true,
  };
}

/** The rows the batch changed per table, its children's included. */
function changedRows(resource: BatchResource, prepared: PreparedWrite, counts: BatchCounts) {
  const changed = [{ table: resource.table, rows: counts.created + counts.updated }];
  if (resource.children && prepared.distinct > 0) {
    // Items are written with new parents only: their share of the batch's items, near enough here.
    const rows = Math.round((prepared.childItems * counts.created) / prepared.distinct);
    changed.push({ table: resource.children.table, rows });
  }
  return changed;
}

/**
 * The batch pipeline without HTTP, for the command line and demo data: the same validation, the same
 * reference check, the same write (one statement), the counts. Throws with the first invalid items
 * when the batch is invalid; nothing is written then.
 */
export async function loadBatch(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  items: readonly unknown[],
): Promise<BatchCounts> {
  const checked = await checkItems(resource, items, db.statementRows, NO_OPTIONS);
  const result = await answerChecked({ db }, tenantId, resource, checked, NO_OPTIONS);
  if (result.kind === 'invalid') {
    throw new Error(`invalid ${resource.name}: ${JSON.stringify(result.errors.slice(0, 3))}`);
  }
  for (const { table, rows } of result.written ?? []) await db.wrote(table, rows);
  return result.counts;
}
