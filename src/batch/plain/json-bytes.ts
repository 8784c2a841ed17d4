/*
 * The bytes of JSON a plain body's scanner (src/batch/plain/plain-batch.ts) reads and writes, and the
 * small comparisons it makes on them.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const SPACE = 0x20;
export const MINUS = 0x2d;
export const POINT = 0x2e;
export const ZERO = 0x30;
export const NINE = 0x39;
export const NULL_TEXT = new Uint8Array([0x6e, 0x75, 0x6c, 0x6c]); // null

/** Printable ASCII other than the quote and the backslash: the same bytes in JSON and in a literal. */
export const isPlainText = (text: string) => /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(text);

/** JSON's white space: space, tab, line feed, carriage return. */
export function isSpace(byte: number): boolean {
  return byte === SPACE || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Whether b[start, start + length) is the name's bytes. */
export function sameName(name: Uint8Array, b: Uint8Array, start: number, length: number): boolean {
  if (name.length !== length) return false;
  for (let i = 0; i < length; i++) if (name[i] !== b[start + i]) return false;
  return true;
}

export function isOneOf(
  b: Uint8Array,
  start: number,
  length: number,
  values: readonly Uint8Array[],
): boolean {
  for (const value of values) {
    if (value.length !== length) continue;
    let same = true;
    for (let i = 0; i < length; i++) {
      if (value[i] !== b[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return true;
  }
  return false;
}
