import { setFlagsFromString } from 'node:v8';

/**
 * The embedded default is meant for a laptop or a small VM (issue 20: at most 350 MB during and after
 * a 10,000-customer batch), so there V8 favours memory over speed: `--optimize-for-size` makes its
 * collections give memory back as they run (compaction, a smaller growth of the heap, the pages of an
 * ended worker thread released) rather than keep it for the next allocation. Node 24 kept an ended
 * worker's pages about 8 s, and three back-to-back 10,000-customer batches peaked at 342-378 MB;
 * with the flag 314-336 MB (Node 20: 317-349 against 248-306). The price is CPU: PGlite batches take
 * up to about a third longer (3-34 % by workload; docs/performance.md, "Fifteenth session").
 * PostgreSQL deployments, where speed is the point, keep V8's defaults.
 *
 * Set at run time, before the database opens (a flag of the command line would hold for both
 * engines): the collector's heuristics read it as they run, and worker threads started later get all
 * of it; the main thread's heap sizes, fixed at its start, keep the command line's. The flag is the
 * process's, for the rest of its life.
 */
export const FOR_SIZE_FLAG = '--optimize-for-size';

/** Sets the flag; returns it, for the log. */
export function favourMemoryOverSpeed(): string {
  setFlagsFromString(FOR_SIZE_FLAG);
  return FOR_SIZE_FLAG;
}
