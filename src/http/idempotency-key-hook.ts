import { createHash } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { InvalidIdempotencyKey } from '../idempotency/idempotency-errors.js';

/** The header of extensions.md 8, as Node names it (lower case). */
export const IDEMPOTENCY_KEY = 'idempotency-key';

/** 1 to 255 visible ASCII characters (0x21-0x7E): no space, no control, nothing a proxy could re-encode. */
const VALID_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The request's Idempotency-Key, or undefined without one. A header sent twice reaches Node joined
 * with ", ", which holds a space and is refused like any other malformed key.
 */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[IDEMPOTENCY_KEY];
  if (value === undefined) return undefined;
  const key = Array.isArray(value) ? value.join(', ') : value;
  if (!VALID_KEY.test(key)) throw new InvalidIdempotencyKey();
  return key;
}

/**
 * onRequest, after the guard: a malformed key is refused before the body is read (and before the
 * batch waits for its turn).
 */
export const checkIdempotencyKey: onRequestAsyncHookHandler = async (request) => {
  idempotencyKeyOf(request);
};

/**
 * What "the same request" means for a key: the method, the path with its query string (outcomes,
 * dry_run, on_invalid change the answer) and the body's exact bytes. Lengths are prefixed, so no two
 * different requests give the same input to the hash.
 */
export function requestHash(method: string, url: string, body: Buffer | undefined): string {
  const hash = createHash('sha256');
  hash.update(`${method.length}:${method}${url.length}:${url}`);
  if (body) hash.update(body);
  return hash.digest('hex');
}
