import { Piscina } from 'piscina';
import { BatchArrayRefused, ValidationCrash } from '../batch/batch-errors.js';
import type { BatchOptions } from '../batch/batch-options.js';
import { type CheckedBatch, checkBatch } from '../batch/check-block.js';
import type { AcknowledgeCheck } from '../deliveries/acknowledge.js';
import type { RejectCheck } from '../deliveries/rejections.js';
import type { BatchResource } from '../resources/batch-resource.js';
import type { BatchTask, BatchTaskResult } from './batch-worker.js';

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
 * (src/admission/batch-admission.ts), and the machine this runs on may have only two cores. A thread ends
 * after IDLE_MS without work: it holds 60-100 MB after a 10 MB body (its heap, which V8 does not give
 * back while it lives). A stream of batches keeps it; the first large body after a pause pays its
 * start (a thread's start, loading the field tables: 100-300 ms). Idle threads do not keep the
 * process alive (Piscina unrefs them).
 */
const IDLE_MS = 5_000;

/** How long an idle thread lives: IDLE_MS, or 0 once endWorkersWhenIdle was called. */
let idleMs = IDLE_MS;

/**
 * Threads end as soon as they are idle, for the embedded default (src/server.ts), which is meant to
 * run in a small VM: a thread kept between back-to-back 10,000-customer batches carried the garbage
 * of the last body into the next, and the process's peak rose from about 310 MB during the first to
 * 405-420 MB and 445-462 MB during the second and third; ended at once, 305-307, 321-324 and 329-338 MB
 * (docs/decisions/0119-embedded-ends-idle-workers.md). Each large body then pays a thread's start.
 * Call before the first large body: a pool already made keeps its setting.
 */
export function endWorkersWhenIdle(): void {
  idleMs = 0;
}

let pool: Piscina | undefined;

function workerPool(): Piscina {
  pool ??= new Piscina({ filename: workerFile, minThreads: 0, maxThreads: 2, idleTimeout: idleMs });
  return pool;
}

/** How many worker threads are alive now (none before the first large body, nor once they ended). */
export function workerThreads(): number {
  return pool?.threads.length ?? 0;
}

/** How many tasks the worker threads have finished in this process (tests count them). */
export function workerTasksCompleted(): number {
  return pool?.completed ?? 0;
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
 * A batch body checked: a large one (bytes from WORKER_BODY_BYTES on) in a worker thread, a small one
 * here. The 400 of an array rule (invalid JSON, not an array, ...) is thrown.
 */
export function checkBatchBody(
  resource: BatchResource,
  body: unknown,
  statementRows: number,
  options: BatchOptions,
): Promise<CheckedBatch> {
  if (body instanceof Buffer && body.length >= WORKER_BODY_BYTES) {
    return checkBody(resource, body, statementRows, options);
  }
  return checkBatch(resource, body, statementRows, options);
}

/**
 * A large body given as bytes, checked in a worker: parse, array rules, validation and the column
 * literals. Same result as the inline check (checkBatch). Throws the 400 of an
 * array rule.
 */
export async function checkBody(
  resource: BatchResource,
  body: Buffer,
  statementRows: number,
  options: BatchOptions,
): Promise<CheckedBatch> {
  const { bytes, transfer } = taskBody(body);
  const task: BatchTask = {
    resource: resource.name,
    body: bytes,
    statementRows,
    skipInvalid: options.skipInvalid,
    outcomes: options.outcomes,
  };
  let result: BatchTaskResult;
  try {
    result = await workerPool().run(task, { transferList: transfer });
  } catch (error) {
    throw new ValidationCrash(error);
  }
  if (result.kind === 'array') throw new BatchArrayRefused(result.rule);
  return {
    items: result.items,
    errors: result.errors,
    invalid: result.invalid,
    keyTexts: result.keyTexts,
    referencedKeys: result.referencedKeys,
    write: result.write,
  };
}

/**
 * A large acknowledgement (or requeue) body, parsed and checked in a worker (checkAcknowledgeBytes
 * there): a 2 MiB key flood held the event loop 300 ms inline. Only the codes come back.
 */
export function checkAcknowledgeBody(body: Buffer): Promise<AcknowledgeCheck> {
  return runOnBody(body, 'checkAcknowledgeBody');
}

/** A large rejection body, parsed and checked in a worker (checkRejectBytes there). */
export function checkRejectBody(body: Buffer): Promise<RejectCheck> {
  return runOnBody(body, 'checkRejectBody');
}

/** A worker function of a body's bytes, its failure a ValidationCrash (a bug, not the client's). */
async function runOnBody<T>(body: Buffer, name: string): Promise<T> {
  const { bytes, transfer } = taskBody(body);
  try {
    return await workerPool().run({ body: bytes }, { name, transferList: transfer });
  } catch (error) {
    throw new ValidationCrash(error);
  }
}
