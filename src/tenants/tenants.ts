import type { Queryable } from '../db/database.js';

/** Returns the id of the tenant with this name, creating it if it does not exist. */
export async function ensureTenant(db: Queryable, name: string): Promise<number> {
  const [row] = await db.query<{ id: number }>(
    `WITH inserted AS (
       INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id
     )
     SELECT id FROM inserted UNION ALL SELECT id FROM tenants WHERE name = $1 LIMIT 1`,
    [name],
  );
  return row!.id;
}
