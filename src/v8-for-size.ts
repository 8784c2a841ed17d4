import { setFlagsFromString } from 'node:v8';

/**
 * The embedded default is meant for a laptop or a small VM (issue 20: at most 350 MB during and after
 * a 10,000-customer batch), so there V8 favours memory over speed: `--optimize-for-size` makes its
 * collections give memory back as they run (compaction, a smaller growth of the heap, the pages of an
 * ended worker thread released) rather than keep it for the next allocation. Node 24 kept an ended
 * worker's pages about 8 s, and three back-to-back 10,000-customer batches peaked at 342-378 MB;
 * with the flag 266-336 MB (Node 20: 317-349 against 236-319). The price is CPU: such a batch takes
 * 10-25 % longer on PGlite (docs/performance.md, "Fifteenth session"). PostgreSQL deployments,
 * where speed is the point, keep V8's defaults.
 *
 * Set at run time, before the database opens (a flag of the command line would hold for both
 * engines): V8 reads it at each collection, and worker threads started later share it.
 */
export const FOR_SIZE_FLAG = '--optimize-for-size';

export function favourMemoryOverSpeed(): void {
  setFlagsFromString(FOR_SIZE_FLAG);
}
