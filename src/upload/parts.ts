import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { UsageError } from './settings.js';

/**
 * A file's parts (extensions.md 12 and 15): fixed byte ranges of PART_BYTES, part n from byte
 * (n - 1) * PART_BYTES. The service takes a part that ends mid-row (the parts in order are the file),
 * so the command never reads the file to find line ends, and the parts of a file are known from its
 * size alone: a resumed command knows which ranges the job holds without reading what was sent
 * (docs/decisions/0134-upload-parts-are-fixed-byte-ranges.md).
 */

/** The service's limit of a part (extensions.md 12). */
export const MAX_PART_BYTES = 100 * 1024 * 1024;
export const MAX_PARTS = 10_000;

export interface Part {
  n: number;
  start: number;
  /** Exclusive. */
  end: number;
}

/**
 * The part size: 100 MiB, or SFA_UPLOAD_PART_BYTES when set. That setting exists for tests (a
 * multi-part upload of a small file) and has no other use; it must be the same when a job is resumed.
 */
export function partBytes(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.SFA_UPLOAD_PART_BYTES;
  if (given === undefined || given === '') return MAX_PART_BYTES;
  const value = /^\d{1,9}$/.test(given) ? Number(given) : 0;
  if (value < 1 || value > MAX_PART_BYTES) {
    throw new UsageError(`SFA_UPLOAD_PART_BYTES must be a whole number from 1 to ${MAX_PART_BYTES}`);
  }
  return value;
}

/** The parts of a file of `size` bytes; an empty file is one empty part. */
export function planParts(size: number, bytes: number): Part[] {
  const count = Math.max(1, Math.ceil(size / bytes));
  if (count > MAX_PARTS) {
    throw new UsageError(`the file needs ${count} parts of ${bytes} bytes; a job takes at most ${MAX_PARTS}`);
  }
  return Array.from({ length: count }, (_, at) => ({
    n: at + 1,
    start: at * bytes,
    end: Math.min(size, (at + 1) * bytes),
  }));
}

/**
 * How many of the parts a job already holds, from its `parts` (count and bytes): the command sends
 * parts one at a time in order, and a part cut halfway is not kept, so what a job holds from an earlier
 * run is parts 1 to count. That is trusted only when the bytes agree; otherwise every part is sent
 * again (sending a part again replaces it). Parts beyond this file's last cannot be removed: an error.
 */
export function partsHeld(parts: readonly Part[], held: { count: number; bytes: number }): number {
  if (held.count > parts.length) {
    throw new Error(
      `the job holds ${held.count} parts, more than the ${parts.length} of this file: ` +
        'it was sent another file or another part size; abort it and upload again',
    );
  }
  if (held.count === 0) return 0;
  return parts[held.count - 1]!.end === held.bytes ? held.count : 0;
}

export interface JobOptions {
  resource: string;
  format: string;
  on_invalid: string;
  delimiter?: string;
}

/**
 * The Idempotency-Key of the job's creation: the same command on the same file (its path, size,
 * modification time and inode) with the same options and part size gets the same key, so a command
 * run again after a crash or a lost answer finds the job it made instead of making a second one
 * (docs/decisions/0135-upload-retries-and-idempotency-keys.md). `after` chains a new key past a job
 * that was aborted.
 */
export function creationKey(path: string, stats: Stats, job: JobOptions, bytes: number, after = ''): string {
  const identity = JSON.stringify([path, stats.size, stats.mtimeMs, stats.ino, job, bytes, after]);
  return `sfa-upload-${createHash('sha256').update(identity).digest('base64url')}`;
}

/** The Idempotency-Key of a job's `complete`: one per job, so every retry of it is a replay. */
export const completionKey = (jobId: string): string => `sfa-upload-complete-${jobId}`;
