import type { Queryable } from '../db/database.js';
import { nextFailedLines } from '../sql/job-runs.js';

/**
 * The lines of the rows the check found invalid, read back from the job's results block by block as
 * the writing goes through the file in line order: the writing leaves them out, and a row whose
 * reference was missing stays out even if the row it names was added since (its result says failed).
 */
export class FailedLines {
  readonly #q: Queryable;
  readonly #jobId: string;
  /** Lines loaded and not yet passed, ascending. */
  #lines: number[] = [];
  #at = 0;
  /** The first line of the last block loaded. */
  #after = 0;
  /** The last line of the blocks loaded (every failed line up to it is in #lines). */
  #through = 0;
  #done = false;

  constructor(q: Queryable, jobId: string) {
    this.#q = q;
    this.#jobId = jobId;
  }

  /** Loads blocks until every failed line up to `line` is known. */
  async loadThrough(line: number): Promise<void> {
    while (!this.#done && this.#through < line) {
      const block = await nextFailedLines(this.#q, this.#jobId, this.#after);
      if (!block) {
        this.#done = true;
        return;
      }
      this.#lines = this.#lines.slice(this.#at).concat(block.lines);
      this.#at = 0;
      this.#after = block.first_line;
      this.#through = block.lines.at(-1)!;
    }
  }

  /** Whether the row at `line` failed; lines are asked in ascending order, after loadThrough. */
  has(line: number): boolean {
    while (this.#at < this.#lines.length && this.#lines[this.#at]! < line) this.#at++;
    return this.#lines[this.#at] === line;
  }
}
