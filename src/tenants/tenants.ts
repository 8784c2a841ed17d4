import { addClient, addSubscriptionKey } from '../auth/credentials.js';
import type { Database, Queryable } from '../db/database.js';

/** A refusal worth showing as it is (to a person at the command line). */
export class TenantError extends Error {
  override name = 'TenantError';
}

/** A new tenant and its first credentials, shown once: only their hashes are stored. */
export interface NewTenant {
  tenant: string;
  tenantId: number;
  keyId: string;
  subscriptionKey: string;
  clientId: string;
  clientSecret: string;
}

export interface TenantInfo {
  id: number;
  name: string;
  createdAt: string;
  activeKeys: number;
  activeClients: number;
}

const NAME_MAX = 100;

function checkTenantName(name: string): void {
  if (name.length === 0 || name.length > NAME_MAX) {
    throw new TenantError(`a tenant name has 1 to ${NAME_MAX} characters`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(name) || name.trim() !== name) {
    throw new TenantError('a tenant name has no control characters and no leading or trailing spaces');
  }
}

/** Creates a tenant with one subscription key and one API client; refuses a name already taken. */
export async function createTenant(db: Database, name: string): Promise<NewTenant> {
  checkTenantName(name);
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ id: number }>(
      'INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id',
      [name],
    );
    if (!row) throw new TenantError(`tenant "${name}" already exists`);
    const key = await addSubscriptionKey(tx, row.id);
    const client = await addClient(tx, row.id);
    return { tenant: name, tenantId: row.id, ...key, ...client };
  });
}

/** The id of the tenant with this name; refuses an unknown name. */
export async function tenantIdByName(db: Queryable, name: string): Promise<number> {
  const [row] = await db.query<{ id: number }>('SELECT id FROM tenants WHERE name = $1', [name]);
  if (!row) throw new TenantError(`no tenant named "${name}"`);
  return row.id;
}

export async function hasTenants(db: Queryable): Promise<boolean> {
  const [row] = await db.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM tenants) AS any');
  return row?.any === true;
}

export function listTenants(db: Queryable): Promise<TenantInfo[]> {
  return db.query<TenantInfo>(
    `SELECT t.id, t.name, to_char(t.created_at, 'YYYY-MM-DD"T"HH24:MI:SS') AS "createdAt",
            (SELECT count(*) FROM subscription_keys k
             WHERE k.tenant_id = t.id AND k.revoked_at IS NULL)::integer AS "activeKeys",
            (SELECT count(*) FROM api_clients c
             WHERE c.tenant_id = t.id AND c.revoked_at IS NULL)::integer AS "activeClients"
     FROM tenants t ORDER BY t.name`,
  );
}

/**
 * Returns the id of the tenant with this name, creating it (without credentials) if it does not exist.
 * For tests and tools that need a bare tenant to own rows.
 */
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
