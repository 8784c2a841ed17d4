import { Piscina } from 'piscina';
import type { CheckedChunk, ChunkTask } from './chunk-check.js';

/**
 * The worker threads that check a job's file (src/jobs/chunk-worker.ts), apart from those of large
 * batch bodies (src/body-threads/batch-worker-pool.ts), so that a job's chunks never wait behind a
 * batch's body nor a batch behind a job's chunks.
 *
 * Two threads: with the main thread reading the file and sending the COPY, and PostgreSQL taking
 * it, both cores of a small machine work during a job's check (docs/decisions/0153). A thread ends
 * after IDLE_MS without a chunk: V8 does not give back a thread's heap while it lives.
 */
const THREADS = 2;
const IDLE_MS = 2_000;

/** The worker's module: its compiled .js beside this file in dist/, its .ts source under tsx. */
const workerFile = new URL(
  import.meta.url.endsWith('.ts') ? './chunk-worker.ts' : './chunk-worker.js',
  import.meta.url,
).href;

let pool: Piscina | undefined;

/** How many chunks may be given to the threads at once: each thread has its next while it works. */
export const CHUNKS_IN_FLIGHT = THREADS * 2;

/** A chunk checked in a worker thread; its bytes move there (the result gives them back). */
export function checkChunkInWorker(task: ChunkTask): Promise<CheckedChunk> {
  pool ??= new Piscina({
    filename: workerFile,
    minThreads: 0,
    maxThreads: THREADS,
    idleTimeout: IDLE_MS,
  });
  return pool.run(task, { transferList: [task.chunk.bytes.buffer as ArrayBuffer] });
}
