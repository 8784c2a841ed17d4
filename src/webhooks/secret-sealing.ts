import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/*
 * Webhook secrets sign every delivery, so unlike credentials they cannot be kept as hashes: they are
 * kept sealed with AES-256-GCM under a server key (the settings' `webhook_sealing`,
 * src/auth/server-secrets.ts). A copy of the endpoints table, a log of its rows or a query that
 * shows them does not give the secrets away; only the service, with its key, signs with them.
 */

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The sealed text of a secret: `v1.` and the base64url of IV, ciphertext and tag. */
export function sealSecret(key: Uint8Array, secret: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url')}`;
}

/** The secret a sealed text holds; throws when it was not sealed with this key. */
export function openSecret(key: Uint8Array, sealed: string): string {
  if (!sealed.startsWith(`${VERSION}.`)) throw new Error('not a sealed webhook secret');
  const bytes = Buffer.from(sealed.slice(VERSION.length + 1), 'base64url');
  const iv = bytes.subarray(0, IV_BYTES);
  const tag = bytes.subarray(bytes.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([
    decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}
