import { ident, NOW_UTC } from '../db/sql.js';
import type { BatchResource } from './resource.js';

/**
 * The one statement that writes a whole batch: one array parameter per column ($1 is the tenant),
 * unnested into rows, inserted in key order (so concurrent batches lock rows in the same order and
 * cannot deadlock), conflicts ignored or updated by the key. It returns one row with the number of
 * rows inserted; for upserts, rows whose values did not change are left alone.
 */
export function buildWriteSql(resource: BatchResource): string {
  const { fieldNames, fieldList, table, key } = resource;
  const setOnInsert = { created_at: NOW_UTC, ...resource.setOnInsert };
  const arrays = fieldList.map((field, at) => `$${at + 2}::${field.sqlType}[]`).join(', ');
  const columns = ['tenant_id', ...fieldNames, ...Object.keys(setOnInsert)].map(ident).join(', ');
  const values = ['$1', ...fieldNames.map((name) => `i.${ident(name)}`), ...Object.values(setOnInsert)].join(
    ', ',
  );
  const order = key
    .map((name) => {
      const field = resource.fields[name]!;
      return field.sqlType === 'text' ? `i.${ident(name)} COLLATE "C"` : `i.${ident(name)}`;
    })
    .join(', ');
  const conflictTarget = ['tenant_id', ...key].map(ident).join(', ');

  let onConflict = 'DO NOTHING';
  if (resource.onExisting === 'update') {
    const changing = fieldNames.filter((name) => !key.includes(name));
    const setOnUpdate = { updated_at: NOW_UTC, ...resource.setOnUpdate };
    const assignments = [
      ...changing
        .filter((name) => !(name in setOnUpdate))
        .map((name) => `${ident(name)} = EXCLUDED.${ident(name)}`),
      ...Object.entries(setOnUpdate).map(([name, expression]) => `${ident(name)} = ${expression}`),
    ];
    const mine = changing.map((name) => `t.${ident(name)}`).join(', ');
    const theirs = changing.map((name) => `EXCLUDED.${ident(name)}`).join(', ');
    onConflict = `DO UPDATE SET ${assignments.join(', ')} WHERE (${mine}) IS DISTINCT FROM (${theirs})`;
  }

  return `WITH written AS (
  INSERT INTO ${ident(table)} AS t (${columns})
  SELECT ${values}
  FROM unnest(${arrays}) AS i(${fieldNames.map(ident).join(', ')})
  ORDER BY ${order}
  ON CONFLICT (${conflictTarget}) ${onConflict}
  RETURNING (xmax = 0) AS inserted
)
SELECT count(*) FILTER (WHERE inserted)::int AS created FROM written`;
}

/** Which of the given product codes the tenant's product master lacks: one query per batch. */
export const MISSING_PRODUCTS_SQL = `SELECT c.code
FROM unnest($2::text[]) AS c(code)
WHERE NOT EXISTS (SELECT 1 FROM products p WHERE p.tenant_id = $1 AND p.code = c.code)`;
