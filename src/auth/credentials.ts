import type { Queryable } from '../db/database.js';
import { insertApiClient, insertSubscriptionKey } from '../sql/credentials.js';
import { hashClientSecret } from './client-secret.js';
import { randomId, randomSecret } from './secrets.js';
import { serverSecret } from './server-secrets.js';
import { generateSubscriptionKey, hashSubscriptionKey, type NewSubscriptionKey } from './subscription-key.js';

export type { NewSubscriptionKey };

// New subscription keys and API clients of a tenant. A key or a secret is returned once, at creation;
// only its hash is stored. Listing and revoking need no secret: src/sql/credentials.ts.

export interface NewClient {
  clientId: string;
  clientSecret: string;
}

export async function addSubscriptionKey(db: Queryable, tenantId: number): Promise<NewSubscriptionKey> {
  const hashingSecret = await serverSecret(db, 'key_hashing');
  const key = generateSubscriptionKey();
  await insertSubscriptionKey(
    db,
    tenantId,
    key.keyId,
    hashSubscriptionKey(hashingSecret, key.subscriptionKey),
  );
  return key;
}

export async function addClient(db: Queryable, tenantId: number): Promise<NewClient> {
  const client = { clientId: randomId('cl_'), clientSecret: randomSecret(32) };
  await insertApiClient(db, tenantId, client.clientId, await hashClientSecret(client.clientSecret));
  return client;
}
