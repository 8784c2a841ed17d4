import { Readable } from 'node:stream';

/** The body passed the endpoint's byte limit (declared, or as it arrived): 413. */
export class BodyTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`body over ${limit} bytes`);
    this.name = 'BodyTooLarge';
    this.limit = limit;
  }
}

/**
 * Reads a request body whole before the batch asks for a place (src/admission/batch-admission.ts), so a
 * client sending slowly holds no place while others wait. The body limit is enforced here as Fastify
 * would (413 on a declared length over it before reading, or as soon as the bytes pass it), since
 * Fastify counts only later, on the stream returned for its parser.
 */
export async function receiveBody(
  payload: AsyncIterable<Buffer>,
  limit: number,
  declaredLength: string | undefined,
  /** Told each chunk's size before it is kept; throws to stop receiving (a memory budget). */
  hold: (bytes: number) => void = () => {},
): Promise<Buffer> {
  if (declaredLength !== undefined && Number(declaredLength) > limit) throw new BodyTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge(limit);
    hold(chunk.length);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * The received body as the stream Fastify's body parser reads: one chunk, already there (Readable.from
 * would read it through an async iterator, a few promises per request).
 */
export function bodyStream(body: Buffer): Readable {
  const stream = new Readable({ read() {} });
  stream.push(body);
  stream.push(null);
  return stream;
}
