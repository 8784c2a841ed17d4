/**
 * A value in COPY's text format (PostgreSQL, "COPY", "Text Format"): `\N` for NULL, a backslash,
 * tab, newline and carriage return escaped, anything else as it is. Rows are sent so rather than as
 * array literals where many rows go at once: PostgreSQL reads COPY text faster than it parses an
 * array literal per column.
 */
export function copyValue(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  return SPECIAL.test(value) ? value.replace(SPECIAL_ALL, escaped) : value;
}

const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escaped = (character: string) => ESCAPES[character]!;
