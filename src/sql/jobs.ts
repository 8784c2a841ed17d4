import type { Queryable } from '../db/database.js';
import { DATE_TIME_SQL_FORMAT } from '../fields/date-time.js';

// Bulk jobs (extensions.md 12, migration 017): the jobs, their parts' bytes, their results, and the
// statements of the background work that runs them (src/jobs/job-work.ts). Every statement of a
// running job names its holder, so an instance whose lease was taken over changes nothing.

const dateTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', ${DATE_TIME_SQL_FORMAT})`;

/** A job as GET /v1/jobs/{id} shows it (src/jobs/job-view.ts gives it its shape). */
export interface JobRow {
  id: string;
  resource: string;
  format: 'csv' | 'ndjson';
  on_invalid: 'reject' | 'skip';
  delimiter: string;
  state: JobState;
  error: string | null;
  received: number;
  invalid: number;
  created: number;
  updated: number;
  ignored: number;
  parts: number;
  bytes: number;
  created_at: string;
  completed_at: string | null;
  finished_at: string | null;
}

export const JOB_STATES = [
  'open',
  'queued',
  'validating',
  'writing',
  'succeeded',
  'failed',
  'aborted',
] as const;
export type JobState = (typeof JOB_STATES)[number];

const JOB_COLUMNS = `j.id, j.resource, j.format, j.on_invalid, j.delimiter, j.state, j.error,
  j.rows_received::float8 AS received, j.rows_invalid::float8 AS invalid,
  j.rows_created::float8 AS created, j.rows_updated::float8 AS updated, j.rows_ignored::float8 AS ignored,
  (SELECT count(*)::int FROM job_parts p WHERE p.job_id = j.id) AS parts,
  (SELECT coalesce(sum(p.bytes), 0)::float8 FROM job_parts p WHERE p.job_id = j.id) AS bytes,
  ${dateTime('j.created_at')} AS created_at, ${dateTime('j.completed_at')} AS completed_at,
  ${dateTime('j.finished_at')} AS finished_at`;

export interface NewJob {
  id: string;
  tenantId: number;
  resource: string;
  format: 'csv' | 'ndjson';
  onInvalid: 'reject' | 'skip';
  delimiter: string;
}

const INSERT_JOB = `WITH j AS (
  INSERT INTO jobs (id, tenant_id, resource, format, on_invalid, delimiter, state)
  VALUES ($1, $2, $3, $4, $5, $6, 'open')
  RETURNING *
)
SELECT ${JOB_COLUMNS} FROM j`;

export async function insertJob(q: Queryable, job: NewJob): Promise<JobRow> {
  const rows = await q.query<JobRow>(INSERT_JOB, [
    job.id,
    job.tenantId,
    job.resource,
    job.format,
    job.onInvalid,
    job.delimiter,
  ]);
  return rows[0]!;
}

export async function selectJob(q: Queryable, tenantId: number, id: string): Promise<JobRow | undefined> {
  const rows = await q.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs j WHERE j.tenant_id = $1 AND j.id = $2`,
    [tenantId, id],
  );
  return rows[0];
}

/** The tenant's jobs, newest first. */
export function selectJobs(q: Queryable, tenantId: number, limit: number): Promise<JobRow[]> {
  return q.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs j WHERE j.tenant_id = $1 ORDER BY j.created_at DESC, j.id DESC LIMIT $2`,
    [tenantId, limit],
  );
}

/** The job's state, or undefined when the tenant has no such job. */
export async function jobState(q: Queryable, tenantId: number, id: string): Promise<JobState | undefined> {
  const rows = await q.query<{ state: JobState }>('SELECT state FROM jobs WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    id,
  ]);
  return rows[0]?.state;
}

// ---- parts ----

export async function newUploadId(q: Queryable): Promise<number> {
  const rows = await q.query<{ id: number }>(`SELECT nextval('job_uploads')::float8 AS id`);
  return rows[0]!.id;
}

/*
 * A piece's bytes travel as base64 text both ways: PGlite serialises a bytea parameter or result in
 * JavaScript at 300-400 ms a MiB (base64: under 40), and on PostgreSQL the two cost about the same
 * (bytea 10 ms in and 22 out a MiB, base64 17 and 14: pg parses a bytea result as hex text).
 */

export async function insertChunk(
  q: Queryable,
  uploadId: number,
  seq: number,
  jobId: string,
  data: Uint8Array,
): Promise<void> {
  await q.query(
    `INSERT INTO job_part_chunks (upload_id, seq, job_id, data) VALUES ($1, $2, $3, decode($4, 'base64'))`,
    [uploadId, seq, jobId, Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')],
  );
}

/**
 * Points part n at a stored upload, while the job is open, and removes the upload it replaces. The
 * job's row is locked in share mode: a completion (which first locks it for update, lockJob) waits
 * for this statement and then counts this part, or this statement waits for the completion and then
 * finds the job no longer open.
 */
const STORE_PART = `WITH job AS (
  SELECT id FROM jobs WHERE tenant_id = $1 AND id = $2 AND state = 'open' FOR SHARE
), old AS (
  SELECT upload_id FROM job_parts WHERE job_id = $2 AND part = $3 AND EXISTS (SELECT 1 FROM job) FOR UPDATE
), put AS (
  INSERT INTO job_parts (job_id, part, upload_id, bytes)
  SELECT id, $3, $4, $5 FROM job
  ON CONFLICT (job_id, part) DO UPDATE SET upload_id = EXCLUDED.upload_id, bytes = EXCLUDED.bytes
  RETURNING 1
), gone AS (
  DELETE FROM job_part_chunks WHERE upload_id IN (SELECT upload_id FROM old)
)
SELECT count(*)::int AS stored FROM put`;

/** Whether the part now holds the upload (false: the job is not open, or not the tenant's). */
export async function storePart(
  q: Queryable,
  tenantId: number,
  jobId: string,
  part: number,
  uploadId: number,
  bytes: number,
): Promise<boolean> {
  const rows = await q.query<{ stored: number }>(STORE_PART, [tenantId, jobId, part, uploadId, bytes]);
  return rows[0]!.stored === 1;
}

export async function dropUpload(q: Queryable, uploadId: number): Promise<void> {
  await q.query('DELETE FROM job_part_chunks WHERE upload_id = $1', [uploadId]);
}

export interface PartRow {
  part: number;
  upload_id: number;
  bytes: number;
}

export function selectParts(q: Queryable, jobId: string): Promise<PartRow[]> {
  return q.query<PartRow>(
    'SELECT part, upload_id::float8 AS upload_id, bytes::float8 AS bytes FROM job_parts WHERE job_id = $1 ORDER BY part',
    [jobId],
  );
}

/** One stored piece of an upload, or undefined after its last. */
export async function selectChunk(
  q: Queryable,
  uploadId: number,
  seq: number,
): Promise<Uint8Array | undefined> {
  const rows = await q.query<{ data: string }>(
    `SELECT encode(data, 'base64') AS data FROM job_part_chunks WHERE upload_id = $1 AND seq = $2`,
    [uploadId, seq],
  );
  // The line breaks PostgreSQL puts into base64 text every 76 characters are skipped by the decoder.
  return rows[0] && Buffer.from(rows[0].data, 'base64');
}

// ---- complete, abort ----

/**
 * Locks the tenant's job for the completion and answers its state. A part being stored holds the
 * job's row in share mode until it commits (STORE_PART): the lock waits for it, so the parts counted
 * after it are every part stored.
 */
export async function lockJob(q: Queryable, tenantId: number, id: string): Promise<JobState | undefined> {
  const rows = await q.query<{ state: JobState }>(
    'SELECT state FROM jobs WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
    [tenantId, id],
  );
  return rows[0]?.state;
}

/** Queues an open job whose parts are numbered 1 to N without a gap (after lockJob, in its transaction). */
const COMPLETE = `UPDATE jobs j SET state = 'queued', completed_at = now()
WHERE j.tenant_id = $1 AND j.id = $2 AND j.state = 'open'
  AND EXISTS (SELECT 1 FROM job_parts p WHERE p.job_id = j.id)
  AND (SELECT count(*) FROM job_parts p WHERE p.job_id = j.id) = (SELECT max(part) FROM job_parts p WHERE p.job_id = j.id)
RETURNING 1`;

export async function completeJob(q: Queryable, tenantId: number, id: string): Promise<boolean> {
  return (await q.query(COMPLETE, [tenantId, id])).length > 0;
}

/** The first missing part number (1 when there is none), for the 400 of a completion refused. */
export async function firstMissingPart(q: Queryable, id: string): Promise<number> {
  const rows = await q.query<{ missing: number }>(
    `SELECT coalesce(min(n), 1)::int AS missing FROM generate_series(1, (SELECT coalesce(max(part), 0) FROM job_parts WHERE job_id = $1)) n
     WHERE NOT EXISTS (SELECT 1 FROM job_parts WHERE job_id = $1 AND part = n)`,
    [id],
  );
  return rows[0]!.missing;
}

const ABORT = `UPDATE jobs SET state = 'aborted', finished_at = now(), holder = NULL, held_until = NULL
WHERE tenant_id = $1 AND id = $2 AND state IN ('open', 'queued', 'validating')
RETURNING 1`;

export async function abortJob(q: Queryable, tenantId: number, id: string): Promise<boolean> {
  return (await q.query(ABORT, [tenantId, id])).length > 0;
}

/** The bytes of a finished job's parts (extensions.md 12: they may go as soon as it finishes). */
export async function dropJobBytes(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM job_part_chunks WHERE job_id = $1', [id]);
}

// ---- running ----

export interface ClaimedJob {
  id: string;
  tenant_id: number;
  resource: string;
  format: 'csv' | 'ndjson';
  on_invalid: 'reject' | 'skip';
  delimiter: string;
  state: 'validating' | 'writing';
  written_line: number;
}

/**
 * Takes the next job to run: of each tenant only its first unfinished job (by completion), and of
 * those the oldest that no live instance holds and whose tenant is not among `busy` (the tenants
 * this instance runs a job of already). A queued job starts validating.
 */
const CLAIM = `WITH next AS (
  SELECT j.id FROM jobs j
  WHERE j.state IN ('queued', 'validating', 'writing')
    AND (j.held_until IS NULL OR j.held_until < now())
    AND NOT (j.tenant_id = ANY ($3::int[]))
    AND NOT EXISTS (
      SELECT 1 FROM jobs o
      WHERE o.tenant_id = j.tenant_id AND o.state IN ('queued', 'validating', 'writing')
        AND (o.completed_at, o.id) < (j.completed_at, j.id)
    )
  ORDER BY j.completed_at, j.id
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j SET holder = $1, held_until = now() + make_interval(secs => $2),
  state = CASE WHEN j.state = 'queued' THEN 'validating' ELSE j.state END
FROM next
WHERE j.id = next.id AND (j.held_until IS NULL OR j.held_until < now())
RETURNING j.id, j.tenant_id, j.resource, j.format, j.on_invalid, j.delimiter, j.state,
  j.written_line::float8 AS written_line`;

export async function claimJob(
  q: Queryable,
  holder: string,
  leaseSeconds: number,
  busyTenants: readonly number[],
): Promise<ClaimedJob | undefined> {
  const rows = await q.query<ClaimedJob>(CLAIM, [holder, leaseSeconds, busyTenants]);
  return rows[0];
}

/** Lets a job go (the server closes): another instance takes it at its next round. */
export async function releaseJob(q: Queryable, id: string, holder: string): Promise<void> {
  await q.query('UPDATE jobs SET holder = NULL, held_until = NULL WHERE id = $1 AND holder = $2', [
    id,
    holder,
  ]);
}

/** A validation starts (again): the counts and results of an earlier start go. False: not held. */
const START_VALIDATION = `WITH job AS (
  UPDATE jobs SET rows_received = 0, rows_invalid = 0, error = NULL, held_until = now() + make_interval(secs => $3)
  WHERE id = $1 AND holder = $2 AND state = 'validating'
  RETURNING id
), gone AS (
  DELETE FROM job_results WHERE job_id IN (SELECT id FROM job)
)
SELECT count(*)::int AS held FROM job`;

export async function startValidation(q: Queryable, id: string, holder: string, leaseSeconds: number) {
  const rows = await q.query<{ held: number }>(START_VALIDATION, [id, holder, leaseSeconds]);
  return rows[0]!.held === 1;
}

/**
 * The validation's progress: its counts so far, the lease renewed, and a block of failed rows when
 * there is one. False: the job is no longer this holder's (or was aborted).
 */
const VALIDATION_PROGRESS = `WITH job AS (
  UPDATE jobs SET rows_received = $3, rows_invalid = $4, held_until = now() + make_interval(secs => $5)
  WHERE id = $1 AND holder = $2 AND state = 'validating'
  RETURNING id
), block AS (
  INSERT INTO job_results (job_id, outcome, first_line, lines, body)
  SELECT id, 'failed', $6, $7::int8[], $8 FROM job WHERE $8::text IS NOT NULL
)
SELECT count(*)::int AS held FROM job`;

export interface FailedBlock {
  firstLine: number;
  lines: number[];
  body: string;
}

export async function recordValidation(
  q: Queryable,
  id: string,
  holder: string,
  leaseSeconds: number,
  counts: { received: number; invalid: number },
  failed: FailedBlock | undefined,
): Promise<boolean> {
  const rows = await q.query<{ held: number }>(VALIDATION_PROGRESS, [
    id,
    holder,
    counts.received,
    counts.invalid,
    leaseSeconds,
    failed?.firstLine ?? 0,
    failed?.lines ?? null,
    failed?.body ?? null,
  ]);
  return rows[0]!.held === 1;
}

/** The validation passed: the writing starts from the file's first line. */
export async function startWriting(q: Queryable, id: string, holder: string): Promise<boolean> {
  const rows = await q.query(
    `UPDATE jobs SET state = 'writing', written_line = 0 WHERE id = $1 AND holder = $2 AND state = 'validating' RETURNING 1`,
    [id, holder],
  );
  return rows.length > 0;
}

/** The job ends: succeeded or failed (with its message), let go, and its parts' bytes removed. */
export async function finishJob(
  q: Queryable,
  id: string,
  holder: string,
  state: 'succeeded' | 'failed',
  error: string | null,
): Promise<boolean> {
  const rows = await q.query(
    `WITH job AS (
       UPDATE jobs SET state = $3, error = $4, finished_at = now(), holder = NULL, held_until = NULL
       WHERE id = $1 AND holder = $2 AND state IN ('validating', 'writing')
       RETURNING id
     ), gone AS (
       DELETE FROM job_part_chunks WHERE job_id IN (SELECT id FROM job)
     )
     SELECT 1 FROM job`,
    [id, holder, state, error],
  );
  return rows.length > 0;
}

/** The failed rows' lines of the block after `afterLine`, in line order (the writing leaves them out). */
export async function nextFailedLines(
  q: Queryable,
  id: string,
  afterLine: number,
): Promise<{ first_line: number; lines: number[] } | undefined> {
  const rows = await q.query<{ first_line: number; lines: (number | string)[] }>(
    `SELECT first_line::float8 AS first_line, lines FROM job_results
     WHERE job_id = $1 AND outcome = 'failed' AND first_line > $2 ORDER BY first_line LIMIT 1`,
    [id, afterLine],
  );
  const row = rows[0];
  return row && { first_line: row.first_line, lines: row.lines.map(Number) };
}

export interface WrittenBlock {
  /** The last line the transaction covers; the writing resumes after it. */
  toLine: number;
  created: number;
  updated: number;
  ignored: number;
  /** The results' blocks: outcome, first line, NDJSON text. */
  results: { outcome: 'created' | 'updated' | 'ignored'; firstLine: number; body: string }[];
}

/**
 * A writing transaction's record, in that transaction: the progress moved from fromLine to the
 * block's last line, the counts added, the results kept, the lease renewed. False (the caller rolls
 * back): the job is no longer this holder's, or another transaction moved it first.
 */
const RECORD_WRITTEN = `WITH job AS (
  UPDATE jobs SET written_line = $4, rows_created = rows_created + $5, rows_updated = rows_updated + $6,
    rows_ignored = rows_ignored + $7, held_until = now() + make_interval(secs => $8)
  WHERE id = $1 AND holder = $2 AND state = 'writing' AND written_line = $3
  RETURNING id
), blocks AS (
  INSERT INTO job_results (job_id, outcome, first_line, body)
  SELECT job.id, b.outcome, b.first_line, b.body
  FROM job, (VALUES ('created', $9::int8, $10::text), ('updated', $11, $12), ('ignored', $13, $14))
    AS b (outcome, first_line, body)
  WHERE b.body IS NOT NULL
)
SELECT count(*)::int AS held FROM job`;

export async function recordWritten(
  q: Queryable,
  id: string,
  holder: string,
  leaseSeconds: number,
  fromLine: number,
  block: WrittenBlock,
): Promise<boolean> {
  // One parameter per outcome's block, not an array of them: pg escapes every quote of an array's
  // elements in JavaScript (a quarter of a block's record for 10,000 result lines).
  const of = (outcome: string) => block.results.find((result) => result.outcome === outcome);
  const rows = await q.query<{ held: number }>(RECORD_WRITTEN, [
    id,
    holder,
    fromLine,
    block.toLine,
    block.created,
    block.updated,
    block.ignored,
    leaseSeconds,
    ...(['created', 'updated', 'ignored'] as const).flatMap((outcome) => [
      of(outcome)?.firstLine ?? 0,
      of(outcome)?.body ?? null,
    ]),
  ]);
  return rows[0]!.held === 1;
}

/** Renews a running job's lease (a long stretch without a record: a long part of invalid rows). */
export async function renewJob(
  q: Queryable,
  id: string,
  holder: string,
  leaseSeconds: number,
): Promise<boolean> {
  const rows = await q.query(
    `UPDATE jobs SET held_until = now() + make_interval(secs => $3)
     WHERE id = $1 AND holder = $2 AND state IN ('validating', 'writing') RETURNING 1`,
    [id, holder, leaseSeconds],
  );
  return rows.length > 0;
}

// ---- results ----

/** The result blocks of one outcome after `afterLine`, in line order, a few at a time. */
export function selectResultBlocks(
  q: Queryable,
  id: string,
  outcome: string,
  afterLine: number,
  limit: number,
): Promise<{ first_line: number; body: string }[]> {
  return q.query(
    `SELECT first_line::float8 AS first_line, body FROM job_results
     WHERE job_id = $1 AND outcome = $2 AND first_line > $3 ORDER BY first_line LIMIT $4`,
    [id, outcome, afterLine, limit],
  );
}

// ---- upkeep, metrics ----

/**
 * Removes jobs finished more than `days` ago (with their results), at most `limit` at a time; a job
 * left open that long is aborted first (its parts' bytes removed), so that it expires in turn.
 */
export async function removeExpiredJobs(q: Queryable, days: number, limit: number): Promise<number> {
  const abandoned = await q.query<{ id: string }>(
    `UPDATE jobs SET state = 'aborted', finished_at = now(), error = 'Never completed'
     WHERE id IN (
       SELECT id FROM jobs WHERE state = 'open' AND created_at < now() - make_interval(days => $1) LIMIT $2
     ) RETURNING id`,
    [days, limit],
  );
  for (const { id } of abandoned) await dropJobBytes(q, id);
  const rows = await q.query(
    `DELETE FROM jobs WHERE id IN (
       SELECT id FROM jobs WHERE finished_at < now() - make_interval(days => $1) LIMIT $2
     ) RETURNING 1`,
    [days, limit],
  );
  return rows.length;
}

export interface JobFigures {
  states: { state: JobState; jobs: number }[];
  /** Bytes of parts stored and not yet removed. */
  storedBytes: number;
}

export async function jobFigures(q: Queryable): Promise<JobFigures> {
  const states = await q.query<{ state: JobState; jobs: number }>(
    'SELECT state, count(*)::int AS jobs FROM jobs GROUP BY state',
  );
  const stored = await q.query<{ bytes: number }>(
    `SELECT coalesce(sum(p.bytes), 0)::float8 AS bytes FROM job_parts p JOIN jobs j ON j.id = p.job_id
     WHERE j.state IN ('open', 'queued', 'validating', 'writing')`,
  );
  return { states, storedBytes: stored[0]!.bytes };
}
