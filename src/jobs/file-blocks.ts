import type { BatchResource } from '../resources/batch-resource.js';
import type { ClaimedJob } from '../sql/job-runs.js';
import type { FileRow, FileShape } from './file-rows.js';

/*
 * How a job's file is read as rows, and the blocks its rows are checked in, one at a time, in a
 * worker thread (src/jobs/chunk-check.ts): its size is not bounded, memory is.
 */

/** Rows per transaction of the writing (extensions.md 12: at most 10,000), and per block of the check. */
export const BLOCK_ROWS = 10_000;
/**
 * Characters of file text per block of the check, at most: a block of wide rows (customers of 1 KiB:
 * about 15 of them) ends long before 10,000 rows. A block's rows and their values live until it is
 * checked and its rows' COPY text made: blocks small enough to die in V8's young generation cost
 * less collecting (with the text parsed in slices as small: src/jobs/file-rows.ts) and bound the
 * memory held (on 50,000 customers of 1 KiB the server's RSS grew 347 MB with blocks of 4 MiB, 127
 * MB with 512 KiB). The copy of many blocks goes in one transaction (job-check.ts), and a referred
 * key is asked for once (check-block.ts): past the first blocks a small one costs no statement. Rows of
 * prices (25-50 bytes) make blocks of 300-650.
 */
export const BLOCK_CHARS = 16 * 1024;

/** How a job's file is read as rows: its format, and the longest row its resource allows. */
export function fileShape(job: Pick<ClaimedJob, 'format' | 'delimiter'>, resource: BatchResource): FileShape {
  return {
    format: job.format,
    delimiter: job.delimiter,
    fieldNames: resource.fieldNames,
    maxRowChars: Math.max(1024 * 1024, resource.maxItemBytes + 1024),
  };
}

/** Runs of rows as blocks: BLOCK_ROWS, or fewer when they reach BLOCK_CHARS (the last one shorter). */
export async function* blocksOf(runs: AsyncIterable<FileRow[]>): AsyncGenerator<FileRow[]> {
  let block: FileRow[] = [];
  let chars = 0;
  for await (const run of runs) {
    for (const row of run) {
      block.push(row);
      chars += row.chars;
      if (block.length === BLOCK_ROWS || chars >= BLOCK_CHARS) {
        yield block;
        block = [];
        chars = 0;
      }
    }
  }
  if (block.length > 0) yield block;
}
