import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { isDateTime } from '../../src/fields/date-time.js';

/*
 * isDateTime reads yyyy-MM-ddTHH:mm:ss in place. It must accept exactly what the rule it replaced
 * accepted: the pattern, then a Date built from the parts giving the same parts back (so a day the
 * calendar lacks, or a year Date.UTC reads as 1900-1999, is refused).
 */
function byDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(text);
  if (!match) return false;
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  const date = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s));
  return (
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo! - 1 &&
    date.getUTCDate() === d &&
    h! <= 23 &&
    mi! <= 59 &&
    s! <= 59
  );
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

test('every day of the calendar at its edges: the same verdict as a Date built from the parts', () => {
  for (const year of [0, 1, 99, 100, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999]) {
    for (let month = 0; month <= 13; month++) {
      for (let day = 0; day <= 32; day++) {
        for (const time of ['00:00:00', '23:59:59', '24:00:00', '23:60:00', '23:59:60']) {
          const text = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${time}`;
          assert.equal(isDateTime(text), byDate(text), text);
        }
      }
    }
  }
  assert.equal(isDateTime('2024-02-29T12:00:00'), true);
  assert.equal(isDateTime('2023-02-29T12:00:00'), false);
  assert.equal(isDateTime('2100-02-29T12:00:00'), false);
  assert.equal(isDateTime('2000-02-29T12:00:00'), true);
});

test('any text near the shape: the same verdict as a Date built from the parts', () => {
  const near = fc
    .array(fc.constantFrom(...'0123456789-T: +/x٣\n'.split('')), { minLength: 17, maxLength: 21 })
    .map((chars) => chars.join(''));
  const shaped = fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
    )
    .map(
      ([y, mo, d, h, mi, s]) =>
        `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}`,
    );
  fc.assert(
    fc.property(fc.oneof(near, shaped, fc.string()), (text) => isDateTime(text) === byDate(text)),
    { numRuns: 20_000 },
  );
});
