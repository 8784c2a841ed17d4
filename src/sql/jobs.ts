import type { Queryable } from '../db/database.js';
import { DATE_TIME_SQL_FORMAT } from '../fields/date-time.js';

// Bulk jobs (extensions.md 12, migration 017): a job's row, made, read, listed. The other statement
// families are beside it: job-parts.ts, job-completion.ts, job-runs.ts, job-results.ts, job-upkeep.ts.

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
