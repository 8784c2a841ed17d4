import type { Queryable } from '../db/database.js';
import { ident } from '../db/sql.js';

/**
 * Which of the given keys ($2) the tenant's rows of the referred resource lack: one query per batch,
 * for the 400 that names them (the write statement only refuses them, SFA01), and for on_invalid=skip.
 */
function missingReferencesSql(reference: { readonly table: string; readonly column: string }): string {
  return `SELECT c.code
FROM unnest($2::text[]) AS c(code)
WHERE NOT EXISTS (SELECT 1 FROM ${ident(reference.table)} p WHERE p.tenant_id = $1 AND p.${ident(reference.column)} = c.code)`;
}

const missingStatements = new Map<string, string>();

/** The keys among `keys` that name no row of the tenant's referred resource. */
export async function missingReferences(
  q: Queryable,
  reference: { readonly table: string; readonly column: string },
  tenantId: number,
  keys: readonly string[],
): Promise<Set<string>> {
  const name = `${reference.table}.${reference.column}`;
  let sql = missingStatements.get(name);
  if (!sql) {
    sql = missingReferencesSql(reference);
    missingStatements.set(name, sql);
  }
  const rows = await q.query<{ code: string }>(sql, [tenantId, keys]);
  return new Set(rows.map((row) => row.code));
}
