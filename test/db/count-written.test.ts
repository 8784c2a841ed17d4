import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Queryable } from '../../src/db/database.js';
import { products } from '../../src/resources/products.js';
import { buildWriteSql, statementColumns } from '../../src/sql/batch-write.js';
import { overviewJson } from '../../src/sql/overview.js';
import { foldWrittenDeltas } from '../../src/sql/written-counts.js';
import { backends, newTenant } from '../helpers/backends.js';

/*
 * How resource_rows and written_hours are kept (migrations 019 to 022): each statement of the service
 * that inserts or changes a resource's rows appends its counts to written_deltas
 * (src/sql/written-counts.ts), folded by a background work; count_written, the one trigger left, uncounts
 * the rows deleted (by hand: no statement of the service deletes them), per tenant.
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
    test('a batch statement counts itself once, upserts count what they changed, a delete by hand uncounts each tenant', async () => {
      const db = await backend.db();
      const a = await newTenant(db);
      const b = await newTenant(db);
      const write = async (tenant: number, items: [string, string][]) => {
        const statement = writeProducts(tenant, items);
        await db.query(statement.sql, statement.params);
      };
      await write(a, [
        ['B1', 'one'],
        ['B2', 'two'],
        ['B3', 'three'],
      ]);
      await write(b, [
        ['B1', 'one'],
        ['B2', 'two'],
      ]);
      assert.deepEqual(
        [await productCounts(db, a), await productCounts(db, b)],
        [
          ['3', '3'],
          ['2', '2'],
        ],
      );

      // An upsert of one changed row, one unchanged and one new: 1 created, 2 written; in a
      // transaction, counted when it commits.
      await db.transaction(async (tx) => {
        const second = writeProducts(a, [
          ['B1', 'changed'],
          ['B2', 'two'],
          ['B4', 'four'],
        ]);
        await tx.query(second.sql, second.params);
      });
      // The same statement rolled back counts nothing.
      await assert.rejects(
        db.transaction(async (tx) => {
          const third = writeProducts(a, [['B5', 'five']]);
          await tx.query(third.sql, third.params);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual(await productCounts(db, a), ['4', '5']);

      // One DELETE over both tenants: each loses its own rows, records written stay.
      await db.query("DELETE FROM products WHERE tenant_id = ANY ($1::int[]) AND code <> 'B1'", [[a, b]]);
      await db.query('DELETE FROM products WHERE tenant_id = ANY ($1::int[]) AND false', [[a, b]]);
      assert.deepEqual(
        [await productCounts(db, a), await productCounts(db, b)],
        [
          ['1', '5'],
          ['1', '2'],
        ],
      );

      // Folded into the counters' slot 0 (src/background/written-counts-fold.ts): the same counts,
      // read from one place.
      while ((await foldWrittenDeltas(db, 1_000)) === 1_000);
      const [left] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM written_deltas WHERE tenant_id = ANY ($1::int[])',
        [[a, b]],
      );
      assert.equal(left!.n, 0);
      assert.deepEqual(
        [await productCounts(db, a), await productCounts(db, b)],
        [
          ['1', '5'],
          ['1', '2'],
        ],
      );
    });
  });
}
