import type { BatchResource } from './batch-resource.js';

/*
 * What a written batch's items count as (extensions.md 5): every item once, created, updated or
 * ignored. The rule is written once, over an arithmetic: in numbers for the answer
 * (src/batch/write-block.ts), in SQL for the activity row that an unkeyed batch's write statement
 * records itself (src/sql/batch-write.ts), where the rows created are only known to the statement.
 */

export interface Counted<T> {
  created: T;
  updated: T;
  ignored: T;
}

/** Numbers, or SQL expressions. */
export interface Arithmetic<T> {
  zero: T;
  minus(a: T, b: T): T;
}

export const numbers: Arithmetic<number> = { zero: 0, minus: (a, b) => a - b };

export const sqlExpressions: Arithmetic<string> = { zero: '0', minus: (a, b) => `(${a} - ${b})` };

/**
 * From the rows the statement inserted, the items written and their distinct rows: an insert-if-absent
 * resource ignores every item it did not insert; an upsert updates every distinct row it did not
 * insert (changed or not: decision 0063) and ignores the repeats.
 */
export function batchCounts<T>(
  onExisting: BatchResource['onExisting'],
  created: T,
  items: T,
  distinct: T,
  a: Arithmetic<T>,
): Counted<T> {
  return onExisting === 'ignore'
    ? { created, updated: a.zero, ignored: a.minus(items, created) }
    : { created, updated: a.minus(distinct, created), ignored: a.minus(items, distinct) };
}
