import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { copyValue } from '../../src/db/copy-text.js';
import { backends } from '../helpers/backends.js';

/*
 * Transaction.copyFrom (src/db/database.ts) and the values of COPY's text format
 * (src/db/copy-text.ts): what goes in comes back, whatever the characters, on both engines.
 */

const AWKWARD = ['plain', 'tab\there', 'two\nlines', 'crlf\r\n', 'back\\slash', '\\N', 'ünï 🚚', '', ' '];

for (const backend of backends()) {
  describe(`copyFrom on ${backend.name}`, () => {
    test('text, numbers and NULLs come back as they were, in the same transaction and after it', async () => {
      const db = await backend.db();
      const table = `copy_test_${backend.name}`;
      await db.query(`DROP TABLE IF EXISTS ${table}`);
      await db.query(`CREATE TABLE ${table} (n int8, t text, d numeric)`);
      const rows: [number, string | null, string | null][] = AWKWARD.map((t, at) => [at, t, `${at}.25`]);
      rows.push([rows.length, null, null]);
      const text = rows.map((row) => `${row.map(copyValue).join('\t')}\n`).join('');
      const inside = await db.transaction(async (tx) => {
        await tx.copyFrom(`COPY ${table} (n, t, d) FROM STDIN`, text);
        return tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      });
      assert.equal(inside[0]!.n, rows.length);
      const back = await db.query<{ n: string; t: string | null; d: string | null }>(
        `SELECT n::text, t, d::text FROM ${table} ORDER BY n`,
      );
      assert.deepEqual(
        back.map((row) => [Number(row.n), row.t, row.d]),
        rows,
      );
      await db.query(`DROP TABLE ${table}`);
    });

    test('a COPY that fails rolls its transaction back, and the database goes on', async () => {
      const db = await backend.db();
      const table = `copy_fail_${backend.name}`;
      await db.query(`DROP TABLE IF EXISTS ${table}`);
      await db.query(`CREATE TABLE ${table} (n int8 NOT NULL)`);
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.copyFrom(`COPY ${table} (n) FROM STDIN`, '1\nnot a number\n');
        }),
      );
      await assert.rejects(
        db.transaction(async (tx) => {
          await tx.copyFrom(`COPY ${table} (n) FROM STDIN`, '1\n\\N\n');
        }),
      );
      const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      assert.equal(row!.n, 0);
      await db.query(`DROP TABLE ${table}`);
    });
  });
}

test('copyValue escapes exactly what COPY text reads specially', () => {
  assert.equal(copyValue(null), '\\N');
  assert.equal(copyValue(12.5), '12.5');
  assert.equal(copyValue('a\tb\nc\rd\\e'), 'a\\tb\\nc\\rd\\\\e');
  assert.equal(copyValue('\\N'), '\\\\N');
  assert.equal(copyValue('naïve, "quoted"; |'), 'naïve, "quoted"; |');
});
