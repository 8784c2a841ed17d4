import { Piscina } from 'piscina';
import type { Database } from '../db/database.js';
import { ValidationCrash } from '../http/server-errors.js';
import { arrayProblem } from './batch-array.js';
import type { BatchTask, BatchTaskResult } from './batch-worker.js';
import { type CheckedBatch, writeChecked } from './process-batch.js';
import type { BatchResource } from './resource.js';
import type { BatchCounts } from './write-batch.js';

/**
 * Bodies from this size on are parsed and checked in a worker thread. Below it the hop (a task
 * message, a thread's turn, the answer's clone: about a millisecond) costs more than the parse it
 * moves: 256 KiB parse, validate and build their literals in a few ms.
 */
export const WORKER_BODY_BYTES = 256 * 1024;

/**
 * The worker's module: its compiled .js beside this file in dist/, its .ts source under tsx (tests,
 * development), whose loader the worker inherits with the process's --import flag.
 */
const workerFile = new URL(
  import.meta.url.endsWith('.ts') ? './batch-worker.ts' : './batch-worker.js',
  import.meta.url,
).href;

/**
 * Two threads: the batch admission lets two batches be processed at once by default
 * (src/batch/batch-admission.ts), and the machine this runs on may have only two cores. One is kept
 * started (a thread's start, loading the field tables, takes 100-300 ms); idle threads do not keep
 * the process alive (Piscina unrefs them).
 */
let pool: Piscina | undefined;

function workerPool(): Piscina {
  pool ??= new Piscina({ filename: workerFile, minThreads: 1, maxThreads: 2, idleTimeout: 60_000 });
  return pool;
}

/** The body's bytes for the worker: moved when they own their memory, else copied. */
function taskBody(body: Buffer): { bytes: Uint8Array; transfer: ArrayBuffer[] } {
  const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  // A Buffer sharing Node's pool (small ones) must not be moved: the pool would go with it.
  if (
    body.byteOffset === 0 &&
    body.byteLength === body.buffer.byteLength &&
    body.buffer instanceof ArrayBuffer
  ) {
    return { bytes, transfer: [body.buffer] };
  }
  return { bytes: new Uint8Array(bytes), transfer: [] };
}

/**
 * The batch pipeline for a large body given as bytes: parse, array rules, validation and the column
 * literals in a worker, then the write (or the refusal with its unknown products) here. Same answers
 * as the inline pipeline (checkBatchArray, then processBatch).
 */
export async function processBatchBody(
  db: Database,
  tenantId: number,
  resource: BatchResource,
  body: Buffer,
): Promise<BatchCounts> {
  const { bytes, transfer } = taskBody(body);
  const task: BatchTask = { resource: resource.name, body: bytes, statementRows: db.statementRows };
  let result: BatchTaskResult;
  try {
    result = await workerPool().run(task, { transferList: transfer });
  } catch (error) {
    throw new ValidationCrash(error);
  }
  if (result.kind === 'array') throw arrayProblem(result.problem);
  const { productCodes } = result;
  const at = resource.productPosition;
  const checked: CheckedBatch = {
    errors: result.errors,
    rows: () =>
      productCodes.map((code) => {
        if (code === undefined || at === undefined) return undefined;
        const row = [];
        row[at] = code;
        return row;
      }),
    ...(result.write ? { write: result.write } : {}),
  };
  return writeChecked(db, tenantId, resource, checked);
}
