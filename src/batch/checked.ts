import type { ItemError } from './batch-errors.js';
import type { PreparedWrite } from './prepared-write.js';

/**
 * A batch checked, wherever that was (inline, or in a worker thread for a large body): its problems,
 * and what its write and its answer need. Never the parsed items: a worker sends back only this.
 */
export interface CheckedBatch {
  /** The array's length. */
  items: number;
  /** Sorted by index, capped (src/batch/batch-errors.ts); empty for a valid batch. */
  errors: ItemError[];
  /** With on_invalid=skip: 1 for each invalid item (every item looked at). */
  invalid?: Uint8Array | undefined;
  /**
   * Per item, the key its row refers to (referencedKeysOf; empty for a resource without a
   * reference): the rows as far as the missing-references query reads them (referenceRows).
   */
  referencedKeys: (string | undefined)[];
  /** With outcomes=true: per valid item, its key fields as sent, as JSON text. */
  keyTexts?: (string | undefined)[] | undefined;
  /** What writing the valid items needs: absent when nothing is to be written. */
  write?: PreparedWrite | undefined;
}
