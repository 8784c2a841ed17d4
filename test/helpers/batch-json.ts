import type { Database } from '../../src/db/database.js';

/**
 * A JSON number written exactly as given, digits a float could not hold included: JSON.stringify
 * cannot produce 1234567890123456.78, so test bodies that need it are written with toJson.
 */
export class RawNumber {
  constructor(readonly text: string) {}
}

/** A JSON number with this exact text. */
export const num = (text: string) => new RawNumber(text);

/** Marks a field left out of an item (different from null). */
export const MISSING = Symbol('missing');

/** JSON.stringify, except RawNumber values keep their text and MISSING properties are left out. */
export function toJson(value: unknown): string {
  if (value instanceof RawNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const pairs = Object.entries(value)
      .filter(([, v]) => v !== MISSING)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`);
    return `{${pairs.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Rows of a tenant in one table. */
export async function countRows(db: Database, table: string, tenantId: number): Promise<number> {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`not a table name: ${table}`);
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`,
    [tenantId],
  );
  return row!.n;
}
