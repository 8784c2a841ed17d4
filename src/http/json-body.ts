import { parseJsonBytes } from '../fields/json-text.js';

/**
 * The charset parameter of a Content-Type, lower-cased and unquoted, or undefined without one.
 * (Fastify matches "application/json" on the media type alone, whatever the parameters.)
 */
export function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*("?)([^";\s]*)\1/i.exec(contentType ?? '');
  return match ? match[2]!.toLowerCase() : undefined;
}

/** The labels of UTF-8 a client may declare (WHATWG Encoding lists "utf8" and "unicode-1-1-utf-8" too). */
export const isUtf8Charset = (charset: string | undefined) =>
  charset === undefined || charset === 'utf-8' || charset === 'utf8' || charset === 'unicode-1-1-utf-8';

/**
 * A JSON body left as bytes for its route, which parses it off the event loop (a large batch body:
 * src/body-threads/batch-worker-pool.ts). The charset was checked; nothing else.
 */
export class RawJson {
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Bodies of at least this many bytes reach the handler as RawJson, unparsed. */
    rawJsonFrom?: number;
  }
}

/** A request's JSON body: parsed (parseJsonBytes), or RawJson from the route's rawJsonFrom on. */
export function parseJsonRequest(bytes: Buffer, rawJsonFrom: number | undefined): unknown {
  if (rawJsonFrom !== undefined && bytes.length >= rawJsonFrom) return new RawJson(bytes);
  return parseJsonBytes(bytes);
}
