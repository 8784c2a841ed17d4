import { type ColumnType, Field } from './field-type.js';
import type { Direction, JsonSchema } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { int, type Random } from './random.js';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/;
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

/** yyyy-MM-ddTHH:mm:ss, no zone, a real calendar date; stored as timestamp without time zone. */
export class DateTimeField extends Field {
  readonly kind = 'dateTime';
  readonly sqlType = 'timestamp';
  readonly maxJsonBytes = 21;
  readonly columnType: ColumnType = { data_type: 'timestamp without time zone' };

  protected checkPresent(value: unknown, errors: string[]) {
    const match = typeof value === 'string' ? DATE_TIME.exec(value) : null;
    if (!match) {
      errors.push(typeof value === 'string' ? m.dateTime : m.mustBeString);
      return undefined;
    }
    const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
    const date = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s));
    if (
      date.getUTCFullYear() !== y ||
      date.getUTCMonth() !== mo! - 1 ||
      date.getUTCDate() !== d ||
      h! > 23 ||
      mi! > 59 ||
      s! > 59
    ) {
      errors.push(m.dateTime);
      return undefined;
    }
    return value as string;
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
