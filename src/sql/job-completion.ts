import type { Queryable } from '../db/database.js';
import type { JobState } from './jobs.js';

/* A bulk job completed (queued to run) or aborted, and its parts' bytes removed once it finishes. */

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
