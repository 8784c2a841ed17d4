import { randomId } from '../auth/secrets.js';
import type { Database, Queryable, Transaction } from '../db/database.js';
import { abortJob, completeJob, dropJobBytes, firstMissingPart, lockJob } from '../sql/job-completion.js';
import { dropUpload, insertChunk, newUploadId, storePart } from '../sql/job-parts.js';
import { insertJob, type JobRow, jobState, selectJob } from '../sql/jobs.js';
import type { JobInput } from './job-input.js';
import { JobRefusal, jobNotFound, wrongState } from './job-refusal.js';

/*
 * What the job endpoints do (extensions.md 12), without HTTP: create, take a part's bytes as they
 * arrive, complete, abort. The background work (job-work.ts) does the rest.
 */

/** A part's most bytes: 100 MiB. */
export const MAX_PART_BYTES = 100 * 1024 * 1024;
export const MAX_PARTS = 10_000;
/**
 * The pieces a part is stored in: each one statement, so a part in flight holds about one piece in
 * memory, however large it is.
 */
export const PIECE_BYTES = 1024 * 1024;

/** A part's body passed MAX_PART_BYTES (413). */
export class PartTooLarge extends Error {
  constructor() {
    super('part over its limit');
    this.name = 'PartTooLarge';
  }
}

/** The job as the API shows it. */
export function presentJob(row: JobRow) {
  return {
    id: row.id,
    resource: row.resource,
    format: row.format,
    on_invalid: row.on_invalid,
    delimiter: row.format === 'csv' ? row.delimiter : null,
    state: row.state,
    error: row.error,
    rows: {
      received: row.received,
      invalid: row.invalid,
      created: row.created,
      updated: row.updated,
      ignored: row.ignored,
    },
    parts: { count: row.parts, bytes: row.bytes },
    created_at: row.created_at,
    completed_at: row.completed_at,
    finished_at: row.finished_at,
  };
}

export type JobView = ReturnType<typeof presentJob>;

export async function createJob(q: Queryable, tenantId: number, input: JobInput): Promise<JobView> {
  const row = await insertJob(q, { id: randomId('job_', 12), tenantId, ...input });
  return presentJob(row);
}

export async function showJob(q: Queryable, tenantId: number, id: string): Promise<JobView> {
  const row = await selectJob(q, tenantId, id);
  if (!row) throw jobNotFound();
  return presentJob(row);
}

/**
 * Stores part n of an open job from its body as it arrives, a piece at a time; the part then holds
 * these bytes (replacing what it held), or, when the body stops halfway or passes the limit, keeps
 * what it held before and nothing of this body stays.
 */
export async function receivePart(
  db: Database,
  tenantId: number,
  jobId: string,
  part: number,
  body: AsyncIterable<Uint8Array>,
  /** Content-Length, when the request gave one: a part declared too large is refused before it is read. */
  declaredBytes?: number,
): Promise<{ part: number; bytes: number }> {
  const state = await jobState(db, tenantId, jobId);
  if (!state) throw jobNotFound();
  if (state !== 'open') throw wrongState('parts are taken only while it is open', state);
  if (declaredBytes !== undefined && declaredBytes > MAX_PART_BYTES) throw new PartTooLarge();
  const uploadId = await newUploadId(db);
  let bytes = 0;
  let seq = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  // The piece being inserted while the next one arrives: the database's insert and the reading of
  // the body overlap when there are cores for both (a client on another machine). On one machine
  // with the client, two cores: 1 GiB in 16 parts 15.5 s to 14.5 s, the three processes' CPU the
  // bound. A failure is thrown by the next await of it.
  let inserting: Promise<void> | undefined;
  // Stores every whole piece held (all that is held, at the end): a chunk larger than a piece is
  // stored as several, so no statement carries more than PIECE_BYTES.
  const store = async (all: boolean) => {
    let held = Buffer.concat(pending, pendingBytes);
    while (held.length >= PIECE_BYTES || (all && held.length > 0)) {
      await inserting;
      inserting = insertChunk(db, uploadId, seq++, jobId, held.subarray(0, PIECE_BYTES));
      inserting.catch(() => {});
      held = held.subarray(PIECE_BYTES);
    }
    pending = held.length > 0 ? [held] : [];
    pendingBytes = held.length;
  };
  try {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (bytes > MAX_PART_BYTES) throw new PartTooLarge();
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      if (pendingBytes >= PIECE_BYTES) await store(false);
    }
    await store(true);
    await inserting;
    if (!(await storePart(db, tenantId, jobId, part, uploadId, bytes))) {
      const now = await jobState(db, tenantId, jobId);
      throw now ? wrongState('parts are taken only while it is open', now) : jobNotFound();
    }
  } catch (error) {
    // A piece still being inserted lands before its upload is dropped, not after.
    await inserting?.catch(() => {});
    await dropUpload(db, uploadId).catch(() => {});
    throw error;
  }
  return { part, bytes };
}

/** Queues the job: its parts are one file now (202). */
export async function finishUpload(
  q: Database | Transaction,
  tenantId: number,
  id: string,
): Promise<JobView> {
  // In a transaction with the job locked first: a part still being stored is counted (lockJob).
  const complete = async (tx: Transaction) => {
    const state = await lockJob(tx, tenantId, id);
    if (!state) throw jobNotFound();
    if (state !== 'open') throw wrongState('only an open job can be completed', state);
    if (!(await completeJob(tx, tenantId, id))) {
      const missing = await firstMissingPart(tx, id);
      throw new JobRefusal(400, [
        {
          message:
            missing === 1
              ? 'The job has no part 1: send the file as parts numbered from 1 before completing it'
              : `The job has no part ${missing}: parts are numbered from 1 without a gap`,
        },
      ]);
    }
    return showJob(tx, tenantId, id);
  };
  return 'transaction' in q ? q.transaction(complete) : complete(q);
}

/** Aborts a job that has not begun writing; its parts' bytes go. */
export async function cancelJob(q: Queryable, tenantId: number, id: string): Promise<JobView> {
  if (!(await abortJob(q, tenantId, id))) {
    const state = await jobState(q, tenantId, id);
    if (!state) throw jobNotFound();
    throw wrongState('only a job that has not begun writing can be aborted', state);
  }
  await dropJobBytes(q, id);
  return showJob(q, tenantId, id);
}
