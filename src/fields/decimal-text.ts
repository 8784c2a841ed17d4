import { isLosslessNumber } from 'lossless-json';

/** A decimal number taken apart without ever going through a binary float. */
export interface DecimalParts {
  negative: boolean;
  /** Integer digits, no leading zeros ('' for zero). */
  integer: string;
  /** Fraction digits, no trailing zeros. */
  fraction: string;
}

const NUMBER_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
/** Numeric strings accept the plain form only: digits, one optional point, an optional sign. */
const PLAIN_DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;
/** Past this, an exponent only says "far too large" or "far too small"; it is clamped, not expanded. */
const MAX_SHIFT = 1000;

/**
 * Splits the text of a JSON number or a numeric string, exponent included, into its digits.
 * Returns undefined when the text is not a number.
 */
export function parseDecimalText(text: string): DecimalParts | undefined {
  const match = NUMBER_TEXT.exec(text);
  if (!match) return undefined;
  const [, sign, whole = '', part = '', exponentText] = match;
  if (whole === '' && part === '') return undefined;
  let digits = whole + part;
  let point = whole.length + Math.max(-MAX_SHIFT, Math.min(MAX_SHIFT, Number(exponentText ?? 0)));
  if (point > digits.length) digits = digits.padEnd(point, '0');
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  const integer = digits.slice(0, point).replace(/^0+/, '');
  const fraction = digits.slice(point).replace(/0+$/, '');
  return { negative: sign === '-' && (integer !== '' || fraction !== ''), integer, fraction };
}

/** The canonical text PostgreSQL reads exactly: no exponent, no superfluous zeros. */
export function formatDecimal(parts: DecimalParts): string {
  const body = (parts.integer || '0') + (parts.fraction ? `.${parts.fraction}` : '');
  return parts.negative ? `-${body}` : body;
}

export type NumericInput =
  | { kind: 'number'; parts: DecimalParts }
  | { kind: 'badFormat' } // a string that is not a plain decimal
  | { kind: 'notNumeric' }; // neither a number nor a string

/**
 * Reads a JSON value meant as a number: a JSON number (a float, or a LosslessNumber when the body
 * needed lossless parsing) or a numeric string.
 */
export function readNumeric(value: unknown): NumericInput {
  let text: string;
  if (typeof value === 'number') {
    // JSON.parse turns 1e400 into Infinity: it is a number, just far too large.
    text = Number.isFinite(value) ? String(value) : `${value < 0 ? '-' : ''}1e${MAX_SHIFT}`;
  } else if (isLosslessNumber(value)) {
    text = (value as { value: string }).value;
  } else if (typeof value === 'string') {
    text = value.trim();
    if (!PLAIN_DECIMAL.test(text)) return { kind: 'badFormat' };
  } else {
    return { kind: 'notNumeric' };
  }
  const parts = parseDecimalText(text);
  return parts ? { kind: 'number', parts } : { kind: 'badFormat' };
}
