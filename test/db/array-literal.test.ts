import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { arrayLiteral } from '../../src/db/array-literal.js';
import { backends } from '../helpers/backends.js';

/*
 * Every column of a batch reaches unnest($n::type[]) as the array literal arrayLiteral writes: each
 * value must come back from PostgreSQL exactly as it went in, whichever path (JSON or one by one)
 * wrote the literal.
 */

/** What PostgreSQL stores of a string: its UTF-8 encoding (a lone surrogate becomes U+FFFD). */
const stored = (text: string) => Buffer.from(text, 'utf8').toString('utf8');

/** Any text PostgreSQL can hold (no U+0000), quotes, backslashes, braces, commas and controls likely. */
const anyText = fc
  .oneof(
    fc.string({ unit: 'binary' }),
    fc.string({
      unit: fc.constantFrom('"', '\\', '{', '}', ',', ' ', 'NULL', '\n', '\t', '\u0001', 'é', '😀'),
    }),
  )
  .map((text) => text.replaceAll('\u0000', ''));

for (const backend of backends()) {
  describe(`array literals read back by ${backend.name}`, () => {
    test('text: every string, null and the empty string come back unchanged', async () => {
      const db = await backend.db();
      await fc.assert(
        fc.asyncProperty(fc.array(fc.option(anyText), { maxLength: 20 }), async (values) => {
          const rows = await db.query<{ v: string | null }>(
            'SELECT v FROM unnest($1::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n',
            [arrayLiteral(values)],
          );
          assert.deepEqual(
            rows.map((row) => row.v),
            values.map((value) => (value === null ? null : stored(value))),
          );
        }),
        { numRuns: 300 },
      );
    });

    test('numbers, decimal texts, timestamps and NULL in typed arrays', async () => {
      const db = await backend.db();
      const [row] = await db.query<{ n: string[]; i: number[]; t: string[] }>(
        `SELECT array(SELECT x::text FROM unnest($1::numeric[]) x) AS n,
                array(SELECT coalesce(x, -1) FROM unnest($2::integer[]) x) AS i,
                array(SELECT to_char(x, 'YYYY-MM-DD"T"HH24:MI:SS') FROM unnest($3::timestamp[]) x) AS t`,
        [
          arrayLiteral(['1234567890123456.78', '-0.5', null, 7]),
          arrayLiteral([1, null, -2147483648]),
          arrayLiteral(['2026-11-21T10:00:00', null]),
        ],
      );
      assert.deepEqual(row!.n, ['1234567890123456.78', '-0.5', null, '7']);
      assert.deepEqual(row!.i, [1, -1, -2147483648]);
      assert.deepEqual(row!.t, ['2026-11-21T10:00:00', null]);
    });
  });
}

describe('arrayLiteral', () => {
  test('JSON writes the literal when it escaped nothing but quotes and backslashes', () => {
    assert.equal(arrayLiteral(['a', 'b"c', 'd\\"', null, 1.5, '']), '{"a","b\\"c","d\\\\\\"",null,1.5,""}');
    assert.equal(arrayLiteral([]), '{}');
  });
  test('anything else JSON escapes is quoted one value at a time', () => {
    assert.equal(arrayLiteral(['a\nb', 'x"', null, 2]), '{"a\nb","x\\"",NULL,2}');
    assert.equal(arrayLiteral(['\\n']), '{"\\\\n"}', 'a backslash of the data before a letter');
  });
});
