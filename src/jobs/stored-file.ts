import type { Queryable } from '../db/database.js';
import { selectChunk, selectParts } from '../sql/job-parts.js';

/**
 * A job's file as the database holds it: its parts in number order, each piece by piece, one piece
 * read at a time (a few MiB in memory, whatever the file's size). The next piece is asked for while
 * the caller works on this one.
 */
export async function* storedFile(q: Queryable, jobId: string): AsyncGenerator<Uint8Array> {
  const parts = await selectParts(q, jobId);
  for (const part of parts) {
    let next = selectChunk(q, part.upload_id, 0);
    for (let seq = 1; ; seq++) {
      const data = await next;
      if (!data) break;
      next = selectChunk(q, part.upload_id, seq);
      // A failed read ahead is reported by the await above, on the next turn; never unhandled.
      next.catch(() => {});
      yield data;
    }
  }
}
