import type { Queryable } from '../db/database.js';
import { dropJobBytes } from './job-completion.js';
import type { JobState } from './jobs.js';

/* Finished jobs expired, and the jobs' figures for GET /metrics. */

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
