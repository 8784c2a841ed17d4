import { CopyBuffer } from '../db/copy-buffer.js';
import { copyValue } from '../db/copy-text.js';
import type { Queryable, Transaction } from '../db/database.js';
import { sqlState } from '../db/failures.js';
import { ident } from '../db/sql.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { childColumns, writtenColumns } from './batch-write.js';

/*
 * A bulk job's staged rows (extensions.md 12; docs/decisions/0151-jobs-write-from-staged-rows.md):
 * each row that passes the check is copied, as the check goes, into an unlogged table of the job's
 * own, with its line, its key as sent (for its result) and its values in the resource's columns; the
 * items of a resource with children go to a second table. The writing then reads the file no more:
 * each of its transactions is one statement over the next 10,000 staged lines (job-block-write.ts).
 *
 * Unlogged: the rows are written once, not twice (no WAL), and they are a copy of what the stored
 * file holds. Such a table is emptied by a crash's recovery and is empty on a promoted standby, so
 * the copy is marked complete by a row of line 0, added last; without it (or without the table) the
 * staged rows are lost, and the writing copies them again from the file, after its last block.
 */

/** Per job: the tables of its staged rows and of their items. */
export interface StagingTables {
  rows: string;
  items: string;
}

/** A job's staging tables, named by its id (`job_` and hex: randomId). */
export function stagingTables(jobId: string): StagingTables {
  const hex = /^job_([0-9a-f]{1,40})$/.exec(jobId)?.[1];
  if (hex === undefined) throw new Error(`a job id of another shape: ${jobId}`);
  return { rows: ident(`job_rows_${hex}`), items: ident(`job_items_${hex}`) };
}

/** The names of staging tables, for the upkeep that drops those of jobs no longer running. */
const STAGING_NAME = '^job_(rows|items)_[0-9a-f]+$';

/**
 * The COPY text of rows to stage, built row by row as the check goes: of a row only its text is kept,
 * outside the heap (CopyBuffer), so the block's objects can go as soon as it is checked.
 */
export class StagedText {
  readonly rows = new CopyBuffer();
  readonly items = new CopyBuffer();
  count = 0;

  constructor(readonly resource: BatchResource) {}

  /** A row: its line, its key fields as sent (JSON text), its checked values (field order). */
  add(line: number, key: string, values: readonly FieldValue[]): void {
    const { columnPositions, childPosition, keyPositions } = this.resource;
    let text = `${line}\t${copyValue(key)}`;
    for (let at = 0; at < columnPositions.length; at++) {
      text += `\t${copyValue(values[columnPositions[at]!] as string | number | null)}`;
    }
    this.rows.append(`${text}\n`);
    this.count++;
    if (childPosition === undefined) return;
    const parent = copyValue(values[keyPositions[0]!] as string);
    for (const child of values[childPosition] as FieldValue[][]) {
      let item = `${line}\t${parent}`;
      for (const value of child) item += `\t${copyValue(value as string | number | null)}`;
      this.items.append(`${item}\n`);
    }
  }

  /** No rows again, the buffers' memory kept. */
  clear(): void {
    this.rows.clear();
    this.items.clear();
    this.count = 0;
  }

  /** Rows whose COPY text was made elsewhere (src/jobs/chunk-check.ts): `count` rows, and their items. */
  addText(rows: Uint8Array, items: Uint8Array | undefined, count: number): void {
    this.rows.appendBytes(rows);
    if (items) this.items.appendBytes(items);
    this.count += count;
  }
}

/** The job's staging tables made anew, empty (those of an earlier run of it dropped). */
export async function createStaging(q: Queryable, jobId: string, resource: BatchResource): Promise<void> {
  const { rows, items } = stagingTables(jobId);
  const columns = writtenColumns(resource).map((c) => `${ident(c.name)} ${c.sqlType}`);
  let script = `DROP TABLE IF EXISTS ${rows}, ${items};
CREATE UNLOGGED TABLE ${rows} (job_line int8 PRIMARY KEY, job_key text, job_replaced boolean NOT NULL DEFAULT false, ${columns.join(', ')});`;
  if (resource.children) {
    const childColumnsSql = childColumns(resource).map((c) => `${ident(c.name)} ${c.sqlType}`);
    script += `
CREATE UNLOGGED TABLE ${items} (job_line int8 NOT NULL, ${ident(resource.children.parentColumn)} text, ${childColumnsSql.join(', ')});
CREATE INDEX ON ${items} (job_line);`;
  }
  await q.exec(script);
}

export async function dropStaging(q: Queryable, jobId: string): Promise<void> {
  const { rows, items } = stagingTables(jobId);
  await q.exec(`DROP TABLE IF EXISTS ${rows}, ${items}`);
}

/**
 * Drops the staging tables of jobs that no longer run (aborted while running, or ended by a run that
 * could not drop them). How many went.
 */
export async function dropStaleStaging(q: Queryable): Promise<number> {
  const stale = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
     WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND c.relname ~ $1
       AND NOT EXISTS (
         SELECT 1 FROM jobs j WHERE j.state IN ('validating', 'writing')
           AND j.id = 'job_' || substring(c.relname FROM '[0-9a-f]+$')
       )`,
    [STAGING_NAME],
  );
  for (const { name } of stale) await q.exec(`DROP TABLE IF EXISTS ${ident(name)}`);
  return stale.length;
}

/** COPYs the rows (and their items) into the job's staging tables, in the caller's transaction. */
export async function stageRows(tx: Transaction, jobId: string, staged: StagedText): Promise<void> {
  if (staged.count === 0) return;
  const { resource } = staged;
  const { rows, items } = stagingTables(jobId);
  const names = writtenColumns(resource).map((c) => ident(c.name));
  await tx.copyFrom(`COPY ${rows} (job_line, job_key, ${names.join(', ')}) FROM STDIN`, staged.rows.view());
  if (!resource.children || staged.items.byteLength === 0) return;
  const childNames = childColumns(resource).map((c) => ident(c.name));
  await tx.copyFrom(
    `COPY ${items} (job_line, ${ident(resource.children.parentColumn)}, ${childNames.join(', ')}) FROM STDIN`,
    staged.items.view(),
  );
}

/** Key lines per statement of markReplaced. */
const MARKED_PER_STATEMENT = 10_000;

/**
 * Marks the staged rows another row of the same key replaces (extensions.md 5 over the whole file: of
 * an upsert the last occurrence wins, of an insert-if-absent the first): `lines` holds a line of every
 * key that may occur more than once (RepeatedKeys). Keys are compared in their columns, as the
 * table's unique key compares them. Each block's rows not marked then have distinct keys.
 */
export async function markReplaced(
  q: Queryable,
  jobId: string,
  resource: BatchResource,
  lines: readonly number[],
): Promise<void> {
  const { rows } = stagingTables(jobId);
  const keys = resource.key.map(ident).join(', ');
  const same = resource.key.map((name) => `s.${ident(name)} = w.${ident(name)}`).join(' AND ');
  const wins = resource.onExisting === 'update' ? 'max' : 'min';
  for (let at = 0; at < lines.length; at += MARKED_PER_STATEMENT) {
    await q.query(
      `WITH repeated AS (
         SELECT DISTINCT ${keys} FROM ${rows} WHERE job_line = ANY ($1::int8[])
       ), winning AS (
         SELECT ${keys}, ${wins}(job_line) AS job_line FROM ${rows} JOIN repeated USING (${keys})
         WHERE job_line > 0 GROUP BY ${keys}
       )
       UPDATE ${rows} s SET job_replaced = true FROM winning w
       WHERE ${same} AND s.job_line <> w.job_line AND s.job_line > 0`,
      [lines.slice(at, at + MARKED_PER_STATEMENT)],
    );
  }
}

/** The copy is complete: the mark (line 0) that the writing looks for. */
export async function markStaged(q: Queryable, jobId: string): Promise<void> {
  const { rows } = stagingTables(jobId);
  await q.query(`INSERT INTO ${rows} (job_line) VALUES (0)`);
}

/** What the writing does next: its block up to `toLine`, nothing (all written), or copy the rows again. */
export type NextBlock = { toLine: number } | 'done' | 'lost';

/** The end of the next block of at most `rows` staged rows after `fromLine`. */
export async function nextBlock(
  q: Queryable,
  jobId: string,
  fromLine: number,
  rows: number,
): Promise<NextBlock> {
  const { rows: table } = stagingTables(jobId);
  let found: { marked: boolean; end_line: number | null; last_line: number | null } | undefined;
  try {
    // The line read as itself in the ORDER BY (cast outside): the walk of the primary key's index.
    [found] = await q.query(
      `SELECT EXISTS (SELECT 1 FROM ${table} WHERE job_line = 0) AS marked,
         (SELECT job_line FROM ${table} WHERE job_line > $1 ORDER BY job_line OFFSET $2 LIMIT 1)::float8 AS end_line,
         (SELECT max(job_line)::float8 FROM ${table}) AS last_line`,
      [fromLine, rows - 1],
    );
  } catch (error) {
    if (isStagingGone(error)) return 'lost';
    throw error;
  }
  if (!found?.marked) return 'lost';
  if (found.end_line !== null) return { toLine: found.end_line };
  return found.last_line !== null && found.last_line > fromLine ? { toLine: found.last_line } : 'done';
}

/** The staging table is not there (dropped, or never made on this database: a promoted standby's). */
export function isStagingGone(error: unknown): boolean {
  return sqlState(error) === '42P01';
}
