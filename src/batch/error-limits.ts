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
