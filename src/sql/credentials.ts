import type { Queryable } from '../db/database.js';
import { dateTimeSql, NOW_UTC } from '../fields/date-time.js';

// Subscription keys and API clients: only their hashes are stored, so every row here holds a hash
// made by src/auth/, never a key or a secret.

/** A stored credential as the guard checks it: whose it is, its hash, and whether it was revoked. */
export interface StoredSubscriptionKey {
  tenantId: number;
  keyHash: string;
  revoked: boolean;
}

export interface StoredApiClient {
  tenantId: number;
  secretHash: string;
  revoked: boolean;
}

/** A credential as listed to its tenant's administrator: never its hash. */
export interface CredentialInfo {
  id: string;
  createdAt: string;
  revokedAt: string | null;
}

export type RevokeResult = 'revoked' | 'already-revoked' | 'not-found';

const INSERT_SUBSCRIPTION_KEY =
  'INSERT INTO subscription_keys (tenant_id, key_id, key_hash) VALUES ($1, $2, $3)';

export async function insertSubscriptionKey(
  db: Queryable,
  tenantId: number,
  keyId: string,
  keyHash: string,
): Promise<void> {
  await db.query(INSERT_SUBSCRIPTION_KEY, [tenantId, keyId, keyHash]);
}

const INSERT_API_CLIENT = 'INSERT INTO api_clients (tenant_id, client_id, secret_hash) VALUES ($1, $2, $3)';

export async function insertApiClient(
  db: Queryable,
  tenantId: number,
  clientId: string,
  secretHash: string,
): Promise<void> {
  await db.query(INSERT_API_CLIENT, [tenantId, clientId, secretHash]);
}

// Looked up by id alone: the id is what a request carries, and the tenant is what the answer tells.
const SUBSCRIPTION_KEY_BY_ID = `SELECT tenant_id AS "tenantId", key_hash AS "keyHash", revoked_at IS NOT NULL AS revoked
FROM subscription_keys WHERE key_id = $1`;

export async function subscriptionKeyById(
  db: Queryable,
  keyId: string,
): Promise<StoredSubscriptionKey | undefined> {
  const [row] = await db.query<StoredSubscriptionKey>(SUBSCRIPTION_KEY_BY_ID, [keyId]);
  return row;
}

const API_CLIENT_BY_ID = `SELECT tenant_id AS "tenantId", secret_hash AS "secretHash", revoked_at IS NOT NULL AS revoked
FROM api_clients WHERE client_id = $1`;

export async function apiClientById(db: Queryable, clientId: string): Promise<StoredApiClient | undefined> {
  const [row] = await db.query<StoredApiClient>(API_CLIENT_BY_ID, [clientId]);
  return row;
}

/**
 * Revoking is one statement that also tells a credential already revoked from one that does not exist:
 * the UPDATE's row when it revoked now, else the row of an earlier revocation, else none.
 */
const REVOKE_SUBSCRIPTION_KEY = `WITH revoked AS (
  UPDATE subscription_keys SET revoked_at = ${NOW_UTC}
  WHERE tenant_id = $1 AND key_id = $2 AND revoked_at IS NULL
  RETURNING true AS newly
)
SELECT newly FROM revoked
UNION ALL SELECT false FROM subscription_keys WHERE tenant_id = $1 AND key_id = $2 AND revoked_at IS NOT NULL
LIMIT 1`;

/** Revoked keys are refused by every server within the key cache time (30 s). */
export async function revokeSubscriptionKey(
  db: Queryable,
  tenantId: number,
  keyId: string,
): Promise<RevokeResult> {
  return revokeResult(await db.query<{ newly: boolean }>(REVOKE_SUBSCRIPTION_KEY, [tenantId, keyId]));
}

const REVOKE_API_CLIENT = `WITH revoked AS (
  UPDATE api_clients SET revoked_at = ${NOW_UTC}
  WHERE tenant_id = $1 AND client_id = $2 AND revoked_at IS NULL
  RETURNING true AS newly
)
SELECT newly FROM revoked
UNION ALL SELECT false FROM api_clients WHERE tenant_id = $1 AND client_id = $2 AND revoked_at IS NOT NULL
LIMIT 1`;

/** A revoked client gets no new token, and its tokens are refused within the client cache time (30 s). */
export async function revokeClient(db: Queryable, tenantId: number, clientId: string): Promise<RevokeResult> {
  return revokeResult(await db.query<{ newly: boolean }>(REVOKE_API_CLIENT, [tenantId, clientId]));
}

function revokeResult([row]: { newly: boolean }[]): RevokeResult {
  return row === undefined ? 'not-found' : row.newly ? 'revoked' : 'already-revoked';
}

const LIST_SUBSCRIPTION_KEYS = `SELECT key_id AS id, ${dateTimeSql('created_at')} AS "createdAt",
       ${dateTimeSql('revoked_at')} AS "revokedAt"
FROM subscription_keys WHERE tenant_id = $1 ORDER BY created_at, key_id`;

export function listSubscriptionKeys(db: Queryable, tenantId: number): Promise<CredentialInfo[]> {
  return db.query<CredentialInfo>(LIST_SUBSCRIPTION_KEYS, [tenantId]);
}

const LIST_API_CLIENTS = `SELECT client_id AS id, ${dateTimeSql('created_at')} AS "createdAt",
       ${dateTimeSql('revoked_at')} AS "revokedAt"
FROM api_clients WHERE tenant_id = $1 ORDER BY created_at, client_id`;

export function listClients(db: Queryable, tenantId: number): Promise<CredentialInfo[]> {
  return db.query<CredentialInfo>(LIST_API_CLIENTS, [tenantId]);
}
