import type { Queryable } from '../db/database.js';
import { hashClientSecret } from './client-secret.js';
import { randomId, randomSecret } from './secrets.js';
import { serverSecret } from './server-secrets.js';
import { generateSubscriptionKey, hashSubscriptionKey, type NewSubscriptionKey } from './subscription-key.js';

export type { NewSubscriptionKey };

// Creating, listing and revoking a tenant's subscription keys and API clients. A key or a secret is
// returned once, at creation; only its hash is stored.

export interface NewClient {
  clientId: string;
  clientSecret: string;
}

export interface CredentialInfo {
  id: string;
  createdAt: string;
  revokedAt: string | null;
}

export type RevokeResult = 'revoked' | 'already-revoked' | 'not-found';

export async function addSubscriptionKey(db: Queryable, tenantId: number): Promise<NewSubscriptionKey> {
  const hashingSecret = await serverSecret(db, 'key_hashing');
  const key = generateSubscriptionKey();
  await db.query('INSERT INTO subscription_keys (tenant_id, key_id, key_hash) VALUES ($1, $2, $3)', [
    tenantId,
    key.keyId,
    hashSubscriptionKey(hashingSecret, key.subscriptionKey),
  ]);
  return key;
}

export async function addClient(db: Queryable, tenantId: number): Promise<NewClient> {
  const client = { clientId: randomId('cl_'), clientSecret: randomSecret(32) };
  await db.query('INSERT INTO api_clients (tenant_id, client_id, secret_hash) VALUES ($1, $2, $3)', [
    tenantId,
    client.clientId,
    await hashClientSecret(client.clientSecret),
  ]);
  return client;
}

const TABLES = {
  key: { table: 'subscription_keys', id: 'key_id' },
  client: { table: 'api_clients', id: 'client_id' },
} as const;

async function revoke(db: Queryable, kind: keyof typeof TABLES, tenantId: number, id: string) {
  const { table, id: column } = TABLES[kind];
  const [row] = await db.query<{ newly: boolean }>(
    `WITH revoked AS (
       UPDATE ${table} SET revoked_at = (now() AT TIME ZONE 'UTC')
       WHERE tenant_id = $1 AND ${column} = $2 AND revoked_at IS NULL
       RETURNING true AS newly
     )
     SELECT newly FROM revoked
     UNION ALL SELECT false FROM ${table} WHERE tenant_id = $1 AND ${column} = $2 AND revoked_at IS NOT NULL
     LIMIT 1`,
    [tenantId, id],
  );
  const result: RevokeResult = row === undefined ? 'not-found' : row.newly ? 'revoked' : 'already-revoked';
  return result;
}

/** Revoked keys are refused by every server within the key cache time (30 s). */
export function revokeSubscriptionKey(db: Queryable, tenantId: number, keyId: string): Promise<RevokeResult> {
  return revoke(db, 'key', tenantId, keyId);
}

/** A revoked client gets no new token, and its tokens are refused within the client cache time (30 s). */
export function revokeClient(db: Queryable, tenantId: number, clientId: string): Promise<RevokeResult> {
  return revoke(db, 'client', tenantId, clientId);
}

async function list(db: Queryable, kind: keyof typeof TABLES, tenantId: number): Promise<CredentialInfo[]> {
  const { table, id } = TABLES[kind];
  const format = `'YYYY-MM-DD"T"HH24:MI:SS'`;
  return db.query<CredentialInfo>(
    `SELECT ${id} AS id, to_char(created_at, ${format}) AS "createdAt",
            to_char(revoked_at, ${format}) AS "revokedAt"
     FROM ${table} WHERE tenant_id = $1 ORDER BY created_at, ${id}`,
    [tenantId],
  );
}

export function listSubscriptionKeys(db: Queryable, tenantId: number): Promise<CredentialInfo[]> {
  return list(db, 'key', tenantId);
}

export function listClients(db: Queryable, tenantId: number): Promise<CredentialInfo[]> {
  return list(db, 'client', tenantId);
}
