import { randomBytes } from 'node:crypto';

/** Random bytes as unpadded base64url: safe in headers, URLs, form bodies and shells without quoting. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A random identifier that is not a secret: a readable prefix and lowercase hex. */
export function randomId(prefix: string, bytes = 8): string {
  return `${prefix}${randomBytes(bytes).toString('hex')}`;
}
