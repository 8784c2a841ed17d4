import type { Queryable } from '../db/database.js';
import { storedSetting, storeSettingIfAbsent } from '../sql/settings.js';
import { randomSecret } from './secrets.js';

/** The secrets of the server itself, kept in the settings table. */
export type ServerSecretName = 'token_signing' | 'key_hashing' | 'webhook_sealing';

/**
 * Returns the named server secret, generating and storing it on first use. Instances starting together
 * agree: the first insert wins and every instance reads what was stored. A secret already stored is
 * only read, so a database that takes no writes (a standby during a failover) still serves it.
 */
export async function serverSecret(db: Queryable, name: ServerSecretName): Promise<Buffer> {
  const stored = await storedSetting(db, name);
  if (stored !== undefined) return Buffer.from(stored, 'base64url');
  await storeSettingIfAbsent(db, name, randomSecret(32));
  // A separate statement: its snapshot sees a row another instance committed during the insert.
  const value = await storedSetting(db, name);
  if (value === undefined) throw new Error(`server secret ${name} is missing`);
  return Buffer.from(value, 'base64url');
}

/** The key that signs and verifies access tokens: TOKEN_SECRET when set, else the stored one. */
export function tokenSigningKey(
  db: Queryable,
  config: { tokenSecret: string | undefined },
): Promise<Uint8Array> {
  if (config.tokenSecret !== undefined) return Promise.resolve(Buffer.from(config.tokenSecret, 'utf8'));
  return serverSecret(db, 'token_signing');
}

/** Remembers a value once loaded; a failed load is forgotten, so the next call tries again. */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= load().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
