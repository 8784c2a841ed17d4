import { isUtf8 } from 'node:buffer';
import { parse as parseLossless } from 'lossless-json';

/**
 * JSON text as the service reads it: every digit of every number kept (decimal fields), and only
 * well-formed Unicode. Used by the HTTP body parser, the batch worker thread and the routes that
 * take raw bytes.
 */

/**
 * A number literal that a float may not hold exactly: 16 or more digits in a row, starting where a
 * JSON number can start (not inside a word or right after a quote), or any exponent (1e-400 would
 * underflow to 0, 1e400 overflow). It over-matches (digits inside strings), which only costs the
 * slower parse; it never misses a number a float would change. (A lookbehind rather than a consumed
 * character before the number: 10-20 % faster on large bodies.)
 */
const MAY_LOSE_DIGITS = /(?<!["\w.])-?\d[\d.]{15}|\d[eE][+-]?\d/;

/** A key repeated in one object: the last one wins, as with JSON.parse (RFC 8259 allows both). */
const LAST_WINS = { onDuplicateKey: ({ newValue }: { newValue: unknown }) => newValue };

/**
 * Parses a JSON body without losing a digit of any number. The common body has no long number and
 * takes JSON.parse; the rest takes lossless-json, whose numbers arrive as LosslessNumber (text kept).
 * Both define "__proto__" as an own property, never as a prototype.
 * Throws on invalid JSON.
 */
export function parseJsonBody(text: string): unknown {
  if (!MAY_LOSE_DIGITS.test(text)) return JSON.parse(text);
  return parseLossless(text, null, LAST_WINS);
}

/**
 * A run of backslashes. Matched once per run, so the scan stays linear however long a run is (a
 * pattern of the run and the "u" after it backtracked at every position of a run not followed by
 * one: quadratic, 13 s for 128k backslashes, which is valid JSON).
 */
const BACKSLASHES = /\\+/g;

/** The UTF-16 code unit of a "uXXXX" escape body at `at` when it is a surrogate (D800-DFFF), else -1. */
function surrogateAt(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x75 /* u */) return -1;
  const hex = text.slice(at + 1, at + 5);
  if (!/^[dD][89a-fA-F][0-9a-fA-F]{2}$/.test(hex)) return -1;
  return Number.parseInt(hex, 16);
}

/**
 * Whether every surrogate escape of valid JSON text is half of a pair: a high one (D800-DBFF)
 * followed at once by a low one (DC00-DFFF) in the same string. Valid UTF-8 cannot encode a
 * surrogate, so in a body that is UTF-8 a lone surrogate can only come from such an escape. An even
 * run of backslashes is escaped backslashes and text; an odd one escapes the character after it.
 * Scans only the backslashes (Python's json.dumps sends each emoji as a pair), without walking the
 * parsed strings.
 */
function surrogatesPaired(text: string): boolean {
  BACKSLASHES.lastIndex = 0;
  let highEnd = -1; // where the pending high escape ends, or -1
  for (let run = BACKSLASHES.exec(text); run; run = BACKSLASHES.exec(text)) {
    if (run[0].length % 2 === 0) continue; // "\\\\ud800": text, not an escape
    const escapeAt = run.index + run[0].length - 1;
    const unit = surrogateAt(text, escapeAt + 1);
    if (unit < 0) continue; // another escape (\n, \u0041, ...): a pending high fails at the next one
    const isHigh = unit < 0xdc00;
    if (highEnd >= 0) {
      if (isHigh || escapeAt !== highEnd) return false; // the pending high stays alone
      highEnd = -1;
    } else if (isHigh) {
      highEnd = escapeAt + 6;
    } else {
      return false; // a low one without its high
    }
  }
  return highEnd < 0;
}

/**
 * Parses a request body's bytes as JSON text (RFC 8259 8.1: UTF-8), refusing what is not well-formed
 * Unicode, as I-JSON does (RFC 7493 2.1): bytes that are not UTF-8 (overlong forms, encoded
 * surrogates, a stray 0xFF) and strings with a lone surrogate escape ("\\ud800"). Both used to
 * become U+FFFD on the way to the database, so two different codes were stored as one.
 * Throws on anything that is not such JSON.
 */
export function parseJsonBytes(bytes: Buffer): unknown {
  if (!isUtf8(bytes)) throw new SyntaxError('request body is not UTF-8');
  return parseJsonText(bytes.toString('utf8'));
}

/**
 * Parses JSON text already decoded from UTF-8 (a line of a bulk job's NDJSON file) as parseJsonBytes
 * does: every digit kept, a lone surrogate escape refused. Throws on anything that is not such JSON.
 */
export function parseJsonText(text: string): unknown {
  const value = parseJsonBody(text);
  if (!surrogatesPaired(text)) {
    throw new SyntaxError('JSON text has a lone surrogate');
  }
  return value;
}
