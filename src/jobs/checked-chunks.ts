import type { BatchResource } from '../resources/batch-resource.js';
import type { ClaimedJob } from '../sql/job-runs.js';
import type { CheckedChunk, ChunkTask } from './chunk-check.js';
import { CHUNKS_IN_FLIGHT, checkChunkInWorker } from './chunk-check-pool.js';
import { fileShape } from './file-blocks.js';
import { CHUNK_BYTES, type FileChunk, fileChunks } from './file-chunks.js';
import type { TextEnd } from './file-rows.js';
import { checkStopping, type JobRunContext } from './job-run-context.js';
import { storedFile } from './stored-file.js';

/*
 * A job's file checked in worker threads, chunk by chunk (src/jobs/file-chunks.ts), the chunks
 * taken in file order. A chunk is checked ahead on an assumption: that it starts at a row's start,
 * on the line its line breaks before it give, after the header the first chunk read. The chunk
 * before it tells, once checked, where its rows really ended; when that differs (a CSV value in
 * quotes that holds a line break across the cut, a header not in the first chunk), the chunk is
 * checked again from there before it is taken: the rows are always those a reading of the whole
 * file in one pass gives.
 */

interface Dispatched {
  chunk: FileChunk;
  /** The header the check assumed. */
  header: string[] | undefined;
  checked: Promise<CheckedChunk>;
}

/**
 * The job's file's chunks checked, in file order. `stage()`: whether a chunk's check should make its valid rows'
 * COPY text (asked as each is given to a thread).
 */
export function checkedChunks(
  context: JobRunContext,
  job: ClaimedJob,
  resource: BatchResource,
  stage: () => boolean,
): AsyncGenerator<CheckedChunk> {
  return chunksChecked(storedFile(context.db, job.id), job, resource, {
    stage,
    between: () => checkStopping(context),
  });
}

export interface ChunkChecking {
  /** Whether a chunk's check should make its valid rows' COPY text (asked as each is given out). */
  stage(): boolean;
  /** Called before each chunk is taken (throws to stop). */
  between?(): void;
  /** The check of a chunk: in a worker thread. */
  check?(task: ChunkTask): Promise<CheckedChunk>;
  chunkBytes?: number;
}

/** The chunks of a file's pieces checked, in file order (what checkedChunks does, of any pieces). */
export async function* chunksChecked(
  pieces: AsyncIterable<Uint8Array>,
  job: Pick<ClaimedJob, 'format' | 'delimiter'>,
  resource: BatchResource,
  { stage, between = () => {}, check = checkChunkInWorker, chunkBytes = CHUNK_BYTES }: ChunkChecking,
): AsyncGenerator<CheckedChunk> {
  const shape = fileShape(job, resource);
  // A span of the file without a line break longer than this is longer than any row allowed.
  const maxSpanBytes = Math.max(chunkBytes, 4 * shape.maxRowChars);
  const chunks = fileChunks(pieces, job.format, maxSpanBytes, chunkBytes);
  const task = (chunk: FileChunk, header: string[] | undefined, rest?: ChunkTask['rest']): ChunkTask => ({
    resource: resource.name,
    format: job.format,
    delimiter: job.delimiter,
    chunk,
    header,
    ...(rest ? { rest } : {}),
    stage: stage(),
  });
  const dispatched: Dispatched[] = [];
  let header: string[] | undefined;
  let read = false;
  const dispatch = async (limit: number) => {
    while (!read && dispatched.length < limit) {
      const next = await chunks.next();
      if (next.done) {
        read = true;
        break;
      }
      const checked = check(task(next.value, header));
      // Awaited in turn below, or dropped when the check stops; never unhandled meanwhile.
      checked.catch(() => {});
      dispatched.push({ chunk: next.value, header, checked });
    }
  };
  let end: TextEnd | undefined;
  try {
    // The first chunk alone: the others are checked after the header it reads.
    await dispatch(1);
    for (;;) {
      const first = dispatched.shift();
      if (!first) break;
      let checked = await first.checked;
      // Its bytes moved to the thread, and back with the result (checked again, they move again).
      const chunk = { ...first.chunk, bytes: checked.bytes };
      if (end && (end.rest !== '' || end.line !== chunk.line || !sameHeader(first.header, end.header))) {
        checked = await check(task(chunk, end.header, { text: end.rest, line: end.line }));
      }
      end = checked.end;
      header ??= end.header;
      between();
      await dispatch(CHUNKS_IN_FLIGHT);
      yield checked;
      if (checked.problem !== undefined) break;
    }
  } finally {
    // Stopped early: the file's reading ends; the threads' checks still running are let go.
    await chunks.return(undefined);
  }
}

function sameHeader(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((name, at) => name === b[at]);
}
