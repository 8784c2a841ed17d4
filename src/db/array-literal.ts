import type { FieldValue } from '../fields/field.js';

/**
 * A backslash followed by anything but a quote or a backslash: JSON escaped a character the array
 * literal must not (a control character, a lone surrogate). It also matches a backslash of the data
 * followed by a letter ("a\\b" in JSON), which only costs the slower path.
 */
const OTHER_ESCAPE = /\\[^"\\]/;

/**
 * The PostgreSQL array literal of one column's values ({"a","b\"c",NULL,1.5}), the form in which
 * each column of a batch is sent to unnest($n::type[]).
 * JSON.stringify writes it natively, in one flat string: its quoting of strings (\" and \\) is the
 * array literal's, and an unquoted null is NULL. Only when JSON had to escape something else are
 * the elements quoted one by one, as `pg` does. Built here rather than by `pg` (which would take the
 * JavaScript array): `pg` concatenates element by element, which for a 10,000-customer batch left
 * about 50 MB of intermediate strings and took 3x as long
 * (docs/decisions/0113-array-literals-by-json-stringify.md).
 */
export function arrayLiteral(values: readonly FieldValue[]): string {
  const json = JSON.stringify(values);
  if (!OTHER_ESCAPE.test(json)) return `{${json.slice(1, -1)}}`;
  return `{${values.map(element).join(',')}}`;
}

function element(value: FieldValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string') throw new TypeError('array literals hold scalars only');
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}
