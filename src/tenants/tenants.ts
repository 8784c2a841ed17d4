import { addClient, addSubscriptionKey } from '../auth/credentials.js';
import type { Database, Queryable } from '../db/database.js';
import { insertTenant, tenantIdOf } from '../sql/tenants.js';

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
    const tenantId = await insertTenant(tx, name);
    if (tenantId === undefined) throw new TenantError(`tenant "${name}" already exists`);
    const key = await addSubscriptionKey(tx, tenantId);
    const client = await addClient(tx, tenantId);
    return { tenant: name, tenantId, ...key, ...client };
  });
}

/** The id of the tenant with this name; refuses an unknown name. */
export async function tenantIdByName(db: Queryable, name: string): Promise<number> {
  const id = await tenantIdOf(db, name);
  if (id === undefined) throw new TenantError(`no tenant named "${name}"`);
  return id;
}
