import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_OPTIONS } from '../src/batch/batch-options.js';
import { checkItems } from '../src/batch/process-batch.js';
import type { Queryable } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { openPglite } from '../src/db/pglite.js';
import { text } from '../src/fields/field.js';
import { batchResource } from '../src/resources/batch-resource.js';
import { productReference } from '../src/resources/products.js';
import { stocks } from '../src/resources/stocks.js';
import { buildWriteSql, runBatchWrite } from '../src/sql/batch-write.js';
import { ensureTenant } from './helpers/backends.js';

/*
 * The write statement checks references itself (no foreign key): it counts the rows it wrote whose
 * reference names no row, and the caller rolls back. Only inserted rows are checked when the reference
 * is part of the key; every written row otherwise, since an upsert may change a row's reference.
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

test('the write statement counts the rows it wrote that name a missing reference', async () => {
  const db = await openPglite(undefined);
  try {
    await migrate(db);
    const tenant = await ensureTenant(db, 'references');
    await db.query(
      "INSERT INTO products (tenant_id, code, description, state, created_at) VALUES ($1, 'P1', 'p', 'Y', now())",
      [tenant],
    );
    // Reference in the key (stocks): a new row naming a missing product is counted, and only that one.
    const mixed = await written(db, stocks, tenant, [
      { product_code: 'P1', location: 'L1' },
      { product_code: 'NOPE', location: 'L1' },
    ]);
    assert.deepEqual({ created: mixed.created, missing: mixed.missing }, { created: 2, missing: 1 });
    const good = await written(db, stocks, tenant, [{ product_code: 'P1', location: 'L2' }]);
    assert.deepEqual({ created: good.created, missing: good.missing }, { created: 1, missing: 0 });

    // Reference outside the key, upsert: an update that points a row at a missing product is counted.
    await db.exec(`CREATE TABLE assignments (
      tenant_id integer NOT NULL, code varchar(20) NOT NULL, product_code varchar(20) NOT NULL,
      created_at timestamp NOT NULL, updated_at timestamp,
      change_xid xid8 NOT NULL DEFAULT pg_current_xact_id(), PRIMARY KEY (tenant_id, code))`);
    const first = await written(db, assignments, tenant, [{ code: 'A1', product_code: 'P1' }]);
    assert.deepEqual({ created: first.created, missing: first.missing }, { created: 1, missing: 0 });
    const repointed = await written(db, assignments, tenant, [{ code: 'A1', product_code: 'NOPE' }]);
    assert.deepEqual({ created: repointed.created, missing: repointed.missing }, { created: 0, missing: 1 });
  } finally {
    await db.close();
  }
});
