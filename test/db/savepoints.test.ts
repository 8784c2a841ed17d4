import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { backends } from '../helpers/backends.js';

/*
 * Savepoints on the transaction interface (src/db/database.ts, Transaction.savepoint): a part of a
 * transaction kept when it resolves, undone when it throws (the transaction goes on), undone anyway
 * with `undo` (a dry run), and nested ones each on their own. The keyed batch's dry run and its write
 * that may name a missing reference run under one (src/batch/write-block.ts).
 */

async function scratchTable(db: Database): Promise<string> {
  const table = `savepoints_${randomUUID().replaceAll('-', '')}`;
  await db.exec(`CREATE TABLE ${table} (n integer PRIMARY KEY)`);
  return table;
}

async function rows(db: Database, table: string): Promise<number[]> {
  return (await db.query<{ n: number }>(`SELECT n FROM ${table} ORDER BY n`)).map((row) => row.n);
}

for (const backend of backends()) {
  describe(`savepoints on ${backend.name}`, () => {
    test('kept, undone on a throw with the transaction going on, undone with undo, nested', async () => {
      const db = await backend.db();
      const table = await scratchTable(db);
      const insert = (q: { query: Database['query'] }, n: number) =>
        q.query(`INSERT INTO ${table} VALUES ($1)`, [n]);
      const answered = await db.transaction(async (tx) => {
        await insert(tx, 1);
        const kept = await tx.savepoint(async () => {
          await insert(tx, 2);
          return 'kept';
        });
        assert.equal(kept, 'kept');
        await assert.rejects(
          tx.savepoint(async () => {
            await insert(tx, 3);
            await insert(tx, 1); // a duplicate key: the statement fails, the savepoint is undone
          }),
          /duplicate key/,
        );
        // The transaction is usable after the failed part.
        await insert(tx, 4);
        const dry = await tx.savepoint(
          async () => {
            await insert(tx, 5);
            return (await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
          },
          { undo: true },
        );
        assert.equal(dry, 4, 'what the statements saw inside the undone part');
        await tx.savepoint(async () => {
          await insert(tx, 6);
          await assert.rejects(
            tx.savepoint(async () => {
              await insert(tx, 7);
              throw new Error('inner');
            }),
            /inner/,
          );
          await insert(tx, 8);
        });
        return 'committed';
      });
      assert.equal(answered, 'committed');
      assert.deepEqual(await rows(db, table), [1, 2, 4, 6, 8]);
      await db.exec(`DROP TABLE ${table}`);
    });
  });
}
