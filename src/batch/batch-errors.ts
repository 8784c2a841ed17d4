import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';

/**
 * What the batch pipeline refuses, as the domain knows it: no status codes and no bodies. The one
 * error handler (src/http/domain-problems.ts) turns each into the spec's answer.
 */

export interface FieldError {
  field: string | null;
  message: string;
}

/** One element of the 400 body: an invalid item and every problem it has. */
export interface ItemError {
  index: number;
  errors: FieldError[];
}

/** Which array rule a batch body breaks (backoffice-api.md 4.3, 7.1); a name a worker thread can send back. */
export type ArrayRule = 'invalidJson' | 'notAnArray' | 'emptyArray' | 'tooManyItems';

/**
 * The body is not JSON, or not an array of 1 to `max` elements (MAX_BATCH_ITEMS for a batch, fewer
 * for some array endpoints): nothing was validated.
 */
export class BatchArrayRefused extends Error {
  readonly rule: ArrayRule;
  readonly max: number;
  constructor(rule: ArrayRule, max: number = MAX_BATCH_ITEMS) {
    super(`batch array refused: ${rule}`);
    this.name = 'BatchArrayRefused';
    this.rule = rule;
    this.max = max;
  }
}

/** A batch with invalid items (or items naming unknown references): nothing was written. */
export class InvalidBatch extends Error {
  readonly errors: ItemError[];
  constructor(errors: ItemError[]) {
    super('invalid batch');
    this.name = 'InvalidBatch';
    this.errors = errors;
  }
}

/** A batch query parameter (outcomes, dry_run, on_invalid) with a value it does not take. */
export class InvalidBatchParameter extends Error {
  readonly parameter: string;
  readonly reason: string;
  constructor(parameter: string, reason: string) {
    super(`${parameter}: ${reason}`);
    this.name = 'InvalidBatchParameter';
    this.parameter = parameter;
    this.reason = reason;
  }
}

/** Thrown when validation itself fails (a bug), as opposed to finding invalid input. */
export class ValidationCrash extends Error {
  constructor(cause: unknown) {
    super('validation failed unexpectedly', { cause });
    this.name = 'ValidationCrash';
  }
}

/**
 * How much of a refused batch's problems an answer lists. Without a cap, one item
 * with a million unknown keys bought an 80 MB answer and seconds of event loop; a cut list says so in
 * its last element, in shapes the spec already has ({field: null, ...} inside an item, {index: null,
 * field: null, ...} in the answer), so clients that read today's errors read these too.
 */

/**
 * Above every field table's field count (customers have 63): only unknown keys and delivery items
 * (up to 1,000 each) can fill it.
 */
export const MAX_ERRORS_PER_ITEM = 100;
/** 10,000 items with five problems each are listed whole; the answer stays a few MB at most. */
export const MAX_ERRORS_PER_ANSWER = 50_000;
/** Field names are echoed: an unknown key of a megabyte is not echoed whole. */
const MAX_ECHOED_NAME = 100;

export const itemCut = {
  field: null,
  message: `Too many errors in this item: only the first ${MAX_ERRORS_PER_ITEM} are listed`,
} as const;

export const answerCut = {
  index: null,
  field: null,
  message: `Too many errors in this answer: only the first ${MAX_ERRORS_PER_ANSWER} are listed`,
} as const;

/** A field name as an error names it: the first 100 characters of a longer one, marked with "...". */
export function echoedName(name: string): string {
  if (name.length <= MAX_ECHOED_NAME) return name;
  // Never between the two halves of a surrogate pair: the answer must stay well-formed text.
  const code = name.charCodeAt(MAX_ECHOED_NAME - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? MAX_ECHOED_NAME - 1 : MAX_ECHOED_NAME;
  return `${name.slice(0, end)}...`;
}

interface ListedItem {
  readonly index: number;
  readonly errors: readonly object[];
}

/**
 * The item errors an answer lists: all of them when they hold at most MAX_ERRORS_PER_ANSWER problems,
 * else the first ones up to it (the item at the boundary cut within) followed by answerCut.
 */
export function cutAnswer(items: readonly object[]): readonly object[] {
  let total = 0;
  for (let at = 0; at < items.length; at++) {
    const errors = (items[at] as Partial<ListedItem>).errors;
    if (!Array.isArray(errors)) continue;
    if (total + errors.length > MAX_ERRORS_PER_ANSWER) {
      const room = MAX_ERRORS_PER_ANSWER - total;
      const listed = items.slice(0, at);
      if (room > 0) listed.push({ ...(items[at] as ListedItem), errors: errors.slice(0, room) });
      listed.push(answerCut);
      return listed;
    }
    total += errors.length;
  }
  return items;
}
