import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backends, newTenant } from '../helpers/backends.js';

/*
 * count_written (migrations 019, 020): the statement-level triggers that keep resource_rows and
 * written_hours. The routes write one tenant per statement; a statement by hand may write several,
 * and each tenant gets its own counts. A statement that changes no row counts nothing.
 */

for (const backend of backends()) {
  describe(`count_written on ${backend.name}`, () => {
    test('one statement over two tenants counts each; a statement of no rows counts nothing', async () => {
      const db = await backend.db();
      const a = await newTenant(db);
      const b = await newTenant(db);
      const counts = async (tenant: number) => {
        const [row] = await db.query<{ rows: string | null; written: string | null }>(
          `SELECT (SELECT sum(n)::text FROM resource_rows WHERE tenant_id = $1 AND resource = 'products') AS rows,
             (SELECT sum(n)::text FROM written_hours WHERE tenant_id = $1 AND resource = 'products') AS written`,
          [tenant],
        );
        return [row!.rows, row!.written];
      };
      await db.query(
        `INSERT INTO products (tenant_id, code, description, state, created_at)
         SELECT t, 'P' || g, 'p', 'Y', now() FROM unnest($1::int[], $2::int[]) AS x(t, k), generate_series(1, k) g`,
        [
          [a, b],
          [3, 2],
        ],
      );
      assert.deepEqual(
        [await counts(a), await counts(b)],
        [
          ['3', '3'],
          ['2', '2'],
        ],
      );
      await db.query("UPDATE products SET description = 'q' WHERE tenant_id = ANY ($1::int[])", [[a, b]]);
      await db.query("UPDATE products SET description = 'r' WHERE tenant_id = ANY ($1::int[]) AND false", [
        [a, b],
      ]);
      assert.deepEqual(
        [await counts(a), await counts(b)],
        [
          ['3', '6'],
          ['2', '4'],
        ],
      );
      await db.query("DELETE FROM products WHERE tenant_id = ANY ($1::int[]) AND code <> 'P1'", [[a, b]]);
      assert.deepEqual(
        [await counts(a), await counts(b)],
        [
          ['1', '6'],
          ['1', '4'],
        ],
      );
    });
  });
}
