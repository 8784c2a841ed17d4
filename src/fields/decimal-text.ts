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

/**
 * Splits plain decimal text (optional sign, digits, at most one point, no exponent) without a regular
 * expression: the common case, JSON numbers printed by String() and numeric strings.
 */
function plainParts(text: string): DecimalParts {
  let start = 0;
  const sign = text.charCodeAt(0);
  if (sign === 45 /* - */ || sign === 43 /* + */) start = 1;
  const point = text.indexOf('.', start);
  let integer = point < 0 ? text.slice(start) : text.slice(start, point);
  let fraction = point < 0 ? '' : text.slice(point + 1);
  let lead = 0;
  while (lead < integer.length && integer.charCodeAt(lead) === 48) lead++;
  if (lead > 0) integer = integer.slice(lead);
  let end = fraction.length;
  while (end > 0 && fraction.charCodeAt(end - 1) === 48) end--;
  if (end < fraction.length) fraction = fraction.slice(0, end);
  return { negative: sign === 45 && (integer !== '' || fraction !== ''), integer, fraction };
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
  if (typeof value === 'number') {
    // JSON.parse turns 1e400 into Infinity: it is a number, just far too large.
    if (!Number.isFinite(value))
      return { kind: 'number', parts: parseDecimalText(`${value < 0 ? '-' : ''}1e${MAX_SHIFT}`)! };
    const text = String(value);
    // String() writes an exponent only for very large or very small magnitudes.
    return { kind: 'number', parts: text.includes('e') ? parseDecimalText(text)! : plainParts(text) };
  }
  if (typeof value === 'string') {
    const text = value.trim();
    return PLAIN_DECIMAL.test(text) ? { kind: 'number', parts: plainParts(text) } : { kind: 'badFormat' };
  }
  if (isLosslessNumber(value)) {
    const parts = parseDecimalText((value as { value: string }).value);
    return parts ? { kind: 'number', parts } : { kind: 'badFormat' };
  }
  return { kind: 'notNumeric' };
}
