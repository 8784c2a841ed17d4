import { setFlagsFromString } from 'node:v8';

/*
 * V8's settings by database engine, set at run time before the database opens (a flag of the command
 * line would hold for both engines): the collector's heuristics read them as they run, and worker
 * threads started later get all of them; the main thread's heap sizes, fixed at its start, keep the
 * command line's. A flag is the process's, for the rest of its life.
 */

/**
 * The embedded default is meant for a laptop or a small VM (issue 20: at most 350 MB during and after
 * a 10,000-customer batch), so there V8 favours memory over speed: `--optimize-for-size` makes its
 * collections give memory back as they run (compaction, a smaller growth of the heap, the pages of an
 * ended worker thread released) rather than keep it for the next allocation. Node 24 kept an ended
 * worker's pages about 8 s, and three back-to-back 10,000-customer batches peaked at 342-378 MB;
 * with the flag 314-336 MB (Node 20: 317-349 against 248-306). The price is CPU: PGlite batches take
 * up to about a third longer (3-34 % by workload; docs/performance.md, "Fifteenth session").
 */
export const FOR_SIZE_FLAG = '--optimize-for-size';

/**
 * On PostgreSQL, where speed is the point, V8's memory reducer is off. Once the process has been idle
 * a few seconds it shrinks the heap with full collections; the next burst of batches then pays for
 * regrowing it, in collections that come more often until it has. Four concurrent writers of
 * 1,000-price batches alternating with 4 s quiet spells (issue 20's W3) cost the server 3.6 ms of CPU
 * per 1,000 items with it and 3.0 without (two runs each); under a steady load 2.76 against 2.65. The
 * price: 7 MB more at rest (125 against 118 MB, 12 s after 2,500 such batches). glibc's free pages
 * are still handed back when quiet (src/memory-trim.ts). docs/performance.md, "Seventeenth session".
 */
export const NO_MEMORY_REDUCER_FLAG = '--no-memory-reducer';

/** Embedded: sets FOR_SIZE_FLAG; returns it, for the log. */
export function favourMemoryOverSpeed(): string {
  setFlagsFromString(FOR_SIZE_FLAG);
  return FOR_SIZE_FLAG;
}

/** PostgreSQL: sets NO_MEMORY_REDUCER_FLAG; returns it, for the log. */
export function favourSpeedOverMemory(): string {
  setFlagsFromString(NO_MEMORY_REDUCER_FLAG);
  return NO_MEMORY_REDUCER_FLAG;
}
