import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_OPTIONS } from '../../src/batch/batch-options.js';
import { checkItems } from '../../src/batch/check-block.js';
import type { Queryable } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { text } from '../../src/fields/field.js';
import { batchResource } from '../../src/resources/batch-resource.js';
import { productReference } from '../../src/resources/products.js';
import { stocks } from '../../src/resources/stocks.js';
import { buildWriteSql, isMissingReferences, runBatchWrite } from '../../src/sql/batch-write.js';
import { ensureTenant } from '../helpers/backends.js';

/*
 * The write statement checks references itself (no foreign key): when a row it wrote names no row of
 * the referred table it fails whole (SQLSTATE SFA01), even outside a transaction. Only inserted rows
 * are checked when the reference is part of the key; every written row otherwise, since an upsert may
 * change a row's reference.
 */

/** A resource whose reference is not part of its key, so an update may change it. */
const assignments = batchResource({
  name: 'assignments',
  path: '/api/assignments/batch-create',
  message: 'Assignments created successfully',
  summary: 'test only',
  table: 'assignments',
  key: ['code'],
  onExisting: 'update',
  fields: {
    code: text({ max: 20, required: true, description: 'key' }),
    product_code: text({ max: 20, required: true, references: productReference, description: 'a product' }),
  },
});

async function written(q: Queryable, resource: typeof stocks, tenant: number, items: unknown[]) {
  const checked = await checkItems(resource, items, Number.POSITIVE_INFINITY, NO_OPTIONS);
  assert.ok(checked.write, JSON.stringify(checked.errors));
  return runBatchWrite(q, buildWriteSql(resource), tenant, checked.write.chunks[0]!);
}

async function refused(q: Queryable, resource: typeof stocks, tenant: number, items: unknown[]) {
  await assert.rejects(written(q, resource, tenant, items), (error) => isMissingReferences(error));
}

test('the write statement fails whole when a row it wrote names a missing reference', async () => {
  const db = await openPglite(undefined);
  try {
    await migrate(db);
    const tenant = await ensureTenant(db, 'references');
    const other = await ensureTenant(db, 'elsewhere');
    await db.query(
      "INSERT INTO products (tenant_id, code, description, state, created_at) VALUES ($1, 'P1', 'p', 'Y', now()), ($2, 'P2', 'p', 'Y', now())",
      [tenant, other],
    );
    const stockRows = async () =>
      (
        await db.query<{ n: number }>('SELECT count(*)::int AS n FROM stocks WHERE tenant_id = $1', [tenant])
      )[0]!.n;

    // Reference in the key (stocks): one new row naming a missing product (or another tenant's) fails
    // the statement, on its own, and nothing of it stays.
    await refused(db, stocks, tenant, [
      { product_code: 'P1', location: 'L1' },
      { product_code: 'NOPE', location: 'L1' },
    ]);
    await refused(db, stocks, tenant, [{ product_code: 'P2', location: 'L1' }]);
    assert.equal(await stockRows(), 0);
    assert.equal((await written(db, stocks, tenant, [{ product_code: 'P1', location: 'L2' }])).created, 1);
    assert.equal(await stockRows(), 1);

    // Reference outside the key, upsert: an update that points a row at a missing product fails too.
    await db.exec(`CREATE TABLE assignments (
      tenant_id integer NOT NULL, code varchar(20) NOT NULL, product_code varchar(20) NOT NULL,
      created_at timestamp NOT NULL, updated_at timestamp,
      change_xid xid8 NOT NULL DEFAULT pg_current_xact_id(), changed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, code))`);
    assert.equal((await written(db, assignments, tenant, [{ code: 'A1', product_code: 'P1' }])).created, 1);
    await refused(db, assignments, tenant, [{ code: 'A1', product_code: 'NOPE' }]);
    const [row] = await db.query<{ product_code: string }>(
      "SELECT product_code FROM assignments WHERE tenant_id = $1 AND code = 'A1'",
      [tenant],
    );
    assert.equal(row?.product_code, 'P1');
  } finally {
    await db.close();
  }
});
