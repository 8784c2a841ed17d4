import type { Queryable } from '../db/database.js';
import { feedGeneration } from '../sql/feed-positions.js';

const generations = new WeakMap<Queryable, Promise<number>>();

/**
 * The generation of cursors this process serves: read once, at the first request of the feed (so an
 * app builds with its database down), and again after a failed read. A start renumbers before it
 * serves, so the first read sees the generation the start found or began.
 */
export function servedGeneration(db: Queryable): Promise<number> {
  let generation = generations.get(db);
  if (!generation) {
    generation = feedGeneration(db);
    generation.catch(() => generations.delete(db));
    generations.set(db, generation);
  }
  return generation;
}
