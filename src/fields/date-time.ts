import { type ColumnType, Field } from './field-type.js';
import type { Direction, JsonSchema } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { int, type Random } from './random.js';

/** yyyy-MM-ddTHH:mm:ss, no zone; the service also checks that the date exists (no February 30). */
export const DATE_TIME_PATTERN =
  '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d$';
/**
 * The to_char format that writes a timestamp as the API's DateTime, yyyy-MM-ddTHH:mm:ss: the one
 * spelling of it for every statement that reads a DateTime back (lists, credentials, tenants).
 */
/** UTC wall-clock time as SQL: the zone-less DateTime the API speaks, as the database's now(). */
export const NOW_UTC = "(now() AT TIME ZONE 'UTC')";

export const DATE_TIME_SQL_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS'`;

/** The SQL expression that reads a timestamp column as the API's DateTime text. */
export const dateTimeSql = (column: string) => `to_char(${column}, ${DATE_TIME_SQL_FORMAT})`;

/** yyyy-MM-ddTHH:mm:ss of a UTC epoch in ms. */
export function dateTimeText(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19);
}

/** Days of each month of a common year. */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number `count` ASCII digits make from `at`, or -1 when one is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    n = n * 10 + digit;
  }
  return n;
}

/**
 * yyyy-MM-ddTHH:mm:ss of a day the calendar has, read in place: a bulk job checks millions of them,
 * and a match, its strings and a Date per value took 550-580 ms a million values (60-86 ms here).
 * Years before 100 are refused, as they always were (JavaScript's Date.UTC reads them as 1900-1999).
 */
export function isDateTime(text: string): boolean {
  if (
    text.length !== 19 ||
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 || // T
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58
  ) {
    return false;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if (year < 100 || month < 1 || month > 12 || day < 1) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : MONTH_DAYS[month - 1]!);
}

/** yyyy-MM-ddTHH:mm:ss, no zone, a real calendar date; stored as timestamp without time zone. */
export class DateTimeField extends Field {
  readonly kind = 'dateTime';
  readonly sqlType = 'timestamp';
  readonly maxJsonBytes = 21;
  readonly columnType: ColumnType = { data_type: 'timestamp without time zone' };

  protected checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (!isDateTime(value)) {
      errors.push(m.dateTime);
      return undefined;
    }
    return value;
  }

  valueSchema(): JsonSchema {
    return { type: 'string', pattern: DATE_TIME_PATTERN };
  }

  override typeNote(_direction: Direction): string {
    return 'yyyy-MM-ddTHH:mm:ss, no time zone';
  }

  example(): unknown {
    return '2026-01-10T08:00:00';
  }

  /** Within 30 days after the item's own time, to the second. */
  generate(rng: Random, at: number): unknown {
    return dateTimeText(at + int(rng, 0, 30 * 86_400) * 1_000);
  }

  /** PostgreSQL writes the text, so a page of rows goes out as it comes (no Date in between). */
  override selectExpression(column: string): string {
    return dateTimeSql(column);
  }
}
