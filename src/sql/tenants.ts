import type { Queryable } from '../db/database.js';
import { dateTimeSql } from '../fields/date-time.js';

export interface TenantInfo {
  id: number;
  name: string;
  createdAt: string;
  activeKeys: number;
  activeClients: number;
}

const INSERT_TENANT = 'INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id';

/** The id of a new tenant of this name; undefined when the name is taken. */
export async function insertTenant(db: Queryable, name: string): Promise<number | undefined> {
  const [row] = await db.query<{ id: number }>(INSERT_TENANT, [name]);
  return row?.id;
}

const TENANT_ID_BY_NAME = 'SELECT id FROM tenants WHERE name = $1';

export async function tenantIdOf(db: Queryable, name: string): Promise<number | undefined> {
  const [row] = await db.query<{ id: number }>(TENANT_ID_BY_NAME, [name]);
  return row?.id;
}

const ANY_TENANT = 'SELECT EXISTS (SELECT 1 FROM tenants) AS any';

export async function hasTenants(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ any: boolean }>(ANY_TENANT);
  return row?.any === true;
}

const LIST_TENANTS = `SELECT t.id, t.name, ${dateTimeSql('t.created_at')} AS "createdAt",
       (SELECT count(*) FROM subscription_keys k
        WHERE k.tenant_id = t.id AND k.revoked_at IS NULL)::integer AS "activeKeys",
       (SELECT count(*) FROM api_clients c
        WHERE c.tenant_id = t.id AND c.revoked_at IS NULL)::integer AS "activeClients"
FROM tenants t ORDER BY t.name`;

/** Every tenant by name, with its credentials still in force. */
export function listTenants(db: Queryable): Promise<TenantInfo[]> {
  return db.query<TenantInfo>(LIST_TENANTS);
}

const TENANT_IDS = 'SELECT id FROM tenants ORDER BY id';

/** Every tenant's id, in order. */
export async function tenantIds(db: Queryable): Promise<number[]> {
  return (await db.query<{ id: number }>(TENANT_IDS)).map((row) => row.id);
}
