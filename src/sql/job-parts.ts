import type { Queryable } from '../db/database.js';

/*
 * A bulk job's parts (extensions.md 12): an upload's pieces stored as they arrive, a part that then
 * holds the upload, and the pieces read back in order by the job's run.
 */

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
