import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Queryable } from '../../src/db/database.js';
import { products } from '../../src/resources/products.js';
import { buildWriteSql, statementColumns } from '../../src/sql/batch-write.js';
import { overviewJson } from '../../src/sql/overview.js';
import { foldWrittenDeltas } from '../../src/sql/written-counts.js';
import { backends, newTenant } from '../helpers/backends.js';

/*
 * count_written (migrations 019 to 021): the statement-level triggers that keep resource_rows and
 * written_hours for every writer but a batch's write statement, which appends its counts to
 * written_deltas (src/sql/written-counts.ts), folded by a background work. The routes write one
 * tenant per statement; a statement by hand may write several, and each tenant gets its own counts.
 * A statement that changes no row counts nothing.
 */

/** The products' rows and records written as GET /v1/overview reads them (null for none). */
async function productCounts(db: Queryable, tenant: number): Promise<[string | null, string | null]> {
  const overview = JSON.parse(await overviewJson(db, tenant, ['products'])) as {
    rows: { products: number };
    written_per_hour: { resources: { products: number[] } };
  };
  const written = overview.written_per_hour.resources.products.reduce((a, b) => a + b, 0);
  const text = (n: number) => (n === 0 ? null : String(n));
  return [text(overview.rows.products), text(written)];
}

/** The batch write statement of some products (code, description), as the routes send it. */
function writeProducts(
  tenant: number,
  items: readonly [string, string][],
): { sql: string; params: unknown[] } {
  const given: Record<string, string> = { state: 'Y' };
  const rows = items.map(([code, description]) =>
    products.fieldNames.map((name) => ({ ...given, code, description })[name] ?? null),
  );
  return { sql: buildWriteSql(products), params: [tenant, ...statementColumns(products, rows)] };
}

for (const backend of backends()) {
  describe(`count_written on ${backend.name}`, () => {
    test('one statement over two tenants counts each; a statement of no rows counts nothing', async () => {
      const db = await backend.db();
      const a = await newTenant(db);
      const b = await newTenant(db);
      const counts = (tenant: number) => productCounts(db, tenant);
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

    test('a batch statement counts itself once; a statement after it in its transaction is counted by the triggers', async () => {
      const db = await backend.db();
      const tenant = await newTenant(db);
      const first = writeProducts(tenant, [
        ['B1', 'one'],
        ['B2', 'two'],
      ]);
      await db.query(first.sql, first.params);
      assert.deepEqual(await productCounts(db, tenant), ['2', '2'], 'counted once, not by the triggers too');

      // An upsert of one changed row, one unchanged and one new: 1 created, 2 written.
      await db.transaction(async (tx) => {
        const second = writeProducts(tenant, [
          ['B1', 'changed'],
          ['B2', 'two'],
          ['B3', 'three'],
        ]);
        await tx.query(second.sql, second.params);
        await tx.query(
          `INSERT INTO products (tenant_id, code, description, state, created_at) VALUES ($1, 'H1', 'h', 'Y', now())`,
          [tenant],
        );
        await tx.query("UPDATE products SET description = 'again' WHERE tenant_id = $1 AND code = 'B3'", [
          tenant,
        ]);
      });
      assert.deepEqual(await productCounts(db, tenant), ['4', '6']);

      // Folded into the counters' slot 0 (src/background/written-counts-fold.ts): the same counts,
      // read from one place.
      while ((await foldWrittenDeltas(db, 1_000)) === 1_000);
      const [left] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM written_deltas WHERE tenant_id = $1',
        [tenant],
      );
      assert.equal(left!.n, 0);
      assert.deepEqual(await productCounts(db, tenant), ['4', '6']);
    });
  });
}
