import { parse as parseLossless } from 'lossless-json';

/**
 * A number literal that a float may not hold exactly: 16 or more digits in a row, starting where a
 * JSON number can start (not inside a word or right after a quote). It over-matches (digits inside
 * strings), which only costs the slower parse; it never misses a number with 16+ significant digits.
 */
const MAY_LOSE_DIGITS = /(?:^|[^"\w.])-?\d[\d.]{15}/;

/**
 * Parses a JSON body without losing a digit of any number. The common body has no long number and
 * takes JSON.parse; the rest takes lossless-json, whose numbers arrive as LosslessNumber (text kept).
 * Both define "__proto__" as an own property, never as a prototype.
 * Throws on invalid JSON.
 */
export function parseJsonBody(text: string): unknown {
  if (!MAY_LOSE_DIGITS.test(text)) return JSON.parse(text);
  return parseLossless(text);
}
