import { createHmac, randomBytes } from 'node:crypto';

/*
 * Signatures of webhook deliveries by the Standard Webhooks scheme (extensions.md 11): the headers
 * webhook-id, webhook-timestamp and webhook-signature, the last one `v1,` followed by the base64
 * HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the base64-decoded part of the secret after
 * `whsec_`. While a rotated secret still signs, the header holds both signatures, space-separated,
 * and a receiver accepts either.
 */

const PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

/** A delivery's id, the same on every attempt of it: receivers deduplicate by it. */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/** The key of a secret: the bytes its base64 part stands for. */
function keyOf(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/** One `v1,` signature per secret, space-separated (the newest secret first). */
export function signatureHeader(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): string {
  const signed = `${messageId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`)
    .join(' ');
}

/** The headers of one attempt of a delivery: the Standard Webhooks three, the type and the sender. */
export function deliveryHeaders(options: {
  secrets: readonly string[];
  messageId: string;
  timestampSeconds: number;
  body: string;
  userAgent: string;
}): Record<string, string> {
  const { secrets, messageId, timestampSeconds, body } = options;
  return {
    'content-type': 'application/json',
    'user-agent': options.userAgent,
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatureHeader(secrets, messageId, timestampSeconds, body),
  };
}
