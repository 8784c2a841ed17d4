import { setFlagsFromString } from 'node:v8';

/*
 * How V8 trades memory for speed, by engine. Set at run time, before the database opens (a flag of
 * the command line would hold for both engines): the collector's heuristics read these as they run,
 * and worker threads started later get them too; the main thread's heap sizes, fixed at its start,
 * keep the command line's. A flag is the process's, for the rest of its life.
 */

/**
 * The embedded default is meant for a laptop or a small VM (issue 20: at most 350 MB during and after
 * a 10,000-customer batch), so there V8 favours memory over speed: `--optimize-for-size` makes its
 * collections give memory back as they run (compaction, a smaller growth of the heap, the pages of an
 * ended worker thread released) rather than keep it for the next allocation. Node 24 kept an ended
 * worker's pages about 8 s, and three back-to-back 10,000-customer batches peaked at 342-378 MB;
 * with the flag 314-336 MB (Node 20: 317-349 against 248-306). The price is CPU: PGlite batches take
 * up to about a third longer (3-34 % by workload;
 * docs/decisions/0126-v8-optimize-for-size-embedded.md).
 */
export const FOR_SIZE_FLAG = '--optimize-for-size';

/**
 * On PostgreSQL, where speed is the point, the old generation may grow by as much as it holds before
 * the next full collection. V8's own rule sized that room by how fast its last collections ran: under
 * concurrent batches it left about half the live heap (12 MB of room on 23 MB), and began marking after
 * a sixth of that, so a full collection (marking all 23 MB) ran every 200-300 ms, about a quarter of
 * the server's CPU in W3 (docs/decisions/0127-v8-heap-growing-postgres.md). With the room doubled it runs
 * about a third as often; the heap holds at most about twice what is live.
 */
export const HEAP_GROWTH_FLAG = '--heap-growing-percent=100';

/** Sets the flags of the embedded engine; returns them, for the log. */
export function favourMemoryOverSpeed(): string {
  setFlagsFromString(FOR_SIZE_FLAG);
  return FOR_SIZE_FLAG;
}

/** Sets the flags of the PostgreSQL engine; returns them, for the log. */
export function favourSpeedOverMemory(): string {
  setFlagsFromString(HEAP_GROWTH_FLAG);
  return HEAP_GROWTH_FLAG;
}
