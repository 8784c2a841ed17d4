import { createHmac, timingSafeEqual } from 'node:crypto';
import { randomId, randomSecret } from './secrets.js';

/**
 * A subscription key is `sk_<key id>.<secret>`: the key id (16 hex digits) is not secret and finds the
 * stored row, the secret (32 random bytes) proves possession. Keys are checked on every request, so
 * they are stored as HMAC-SHA256 under a server secret: fast to check, and a leaked credentials table
 * alone does not let anyone check guesses. The secret's 256 random bits make a slow hash unnecessary.
 */
const KEY_PATTERN = /^(sk_[0-9a-f]{16})\.[A-Za-z0-9_-]{43}$/;

export interface NewSubscriptionKey {
  keyId: string;
  subscriptionKey: string;
}

export function generateSubscriptionKey(): NewSubscriptionKey {
  const keyId = randomId('sk_');
  return { keyId, subscriptionKey: `${keyId}.${randomSecret(32)}` };
}

/** The key id of a well-formed key, undefined for anything else. */
export function subscriptionKeyId(key: string): string | undefined {
  return KEY_PATTERN.exec(key)?.[1];
}

export function hashSubscriptionKey(hashingSecret: Uint8Array, key: string): string {
  return createHmac('sha256', hashingSecret).update(key, 'utf8').digest('base64url');
}

export function subscriptionKeyMatches(hashingSecret: Uint8Array, key: string, storedHash: string): boolean {
  const presented = createHmac('sha256', hashingSecret).update(key, 'utf8').digest();
  const stored = Buffer.from(storedHash, 'base64url');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
