import type { Queryable } from '../db/database.js';

/*
 * The statements of a running job (src/jobs/job-run.ts, job-work.ts): its claim, its lease, its
 * progress. Every one names the holder, so an instance whose lease was taken over changes nothing.
 */

export interface ClaimedJob {
  id: string;
  tenant_id: number;
  resource: string;
  format: 'csv' | 'ndjson';
  on_invalid: 'reject' | 'skip';
  delimiter: string;
  state: 'validating' | 'writing';
  written_line: number;
  /** The file's size in bytes (its parts are fixed once the job completes). */
  bytes: number;
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
  j.written_line::float8 AS written_line,
  (SELECT coalesce(sum(p.bytes), 0) FROM job_parts p WHERE p.job_id = j.id)::float8 AS bytes`;

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
