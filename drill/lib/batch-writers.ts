import { call } from './answers.js';

/*
 * Clients sending keyed batches (extensions section 8) as an ERP's nightly script should: each batch
 * with its own Idempotency-Key, sent again with the same key, to either instance, until it gets an
 * answer that is not "come back" (a 2xx or a 4xx). They send again after RETRY_MS rather than the
 * answers' Retry-After of 5 s, so the time to the first write accepted again is measured to a quarter
 * of a second.
 */

const RETRY_MS = 250;

export type WriterResource = 'products' | 'customers';

export interface AcknowledgedBatch {
  key: string;
  resource: WriterResource;
  codes: string[];
  status: number;
  counts: { created: number; updated: number; ignored: number };
  /** When the batch was first sent, and when its 2xx came. */
  firstSentAt: number;
  answeredAt: number;
  attempts: number;
}

export interface RefusedBatch {
  key: string;
  resource: WriterResource;
  codes: string[];
  status: number;
  message: string;
}

export interface WriterResults {
  acknowledged: AcknowledgedBatch[];
  refused: RefusedBatch[];
}

function items(resource: WriterResource, codes: string[]): Record<string, unknown>[] {
  if (resource === 'products') return codes.map((code) => ({ code, description: `Drill ${code}` }));
  return codes.map((code) => ({
    code,
    type: 'RETAIL',
    name: `Drill ${code}`,
    contact: 'Ana',
    phone: '3001234567',
    address: 'Cra 1 # 2-3',
    city: 'Bogota',
    quota: '1000.50',
    term: 30,
    payment_method: 'CR30',
    state: 'Y',
  }));
}

export interface WriterOptions {
  instances: readonly string[];
  headers: Readonly<Record<string, string>>;
  clients: { resource: WriterResource; prefix: string }[];
  batchSize: number;
  /** Stops sending new batches once true; a batch under way is still taken to its answer. */
  stopped: () => boolean;
}

interface Answered {
  status: number;
  body: unknown;
  attempts: number;
  /** The answer carried `Idempotent-Replayed: true` (extensions section 8). */
  replayed: boolean;
}

/** Sends one keyed batch, again with the same key, until the answer is neither 5xx, 409 nor 429. */
async function sendUntilAnswered(
  instances: readonly string[],
  headers: Readonly<Record<string, string>>,
  resource: WriterResource,
  key: string,
  body: unknown,
  turn: number,
): Promise<Answered> {
  for (let attempt = 1; ; attempt++) {
    const instance = instances[(turn + attempt) % instances.length]!;
    const path = `/api/${resource}/batch-create`;
    const answer = await call(instance, 'batch', 'POST', path, { ...headers, 'idempotency-key': key }, body);
    const comeBack =
      answer.status === 0 || answer.status >= 500 || answer.status === 409 || answer.status === 429;
    if (!comeBack) {
      const replayed = answer.headers['idempotent-replayed'] === 'true';
      return { status: answer.status, body: answer.body, attempts: attempt, replayed };
    }
    await new Promise((done) => setTimeout(done, RETRY_MS));
  }
}

const countsOf = (body: unknown) => {
  const counts = body as { created: number; updated: number; ignored: number };
  return { created: counts.created, updated: counts.updated, ignored: counts.ignored };
};

export async function runWriters(options: WriterOptions): Promise<WriterResults> {
  const results: WriterResults = { acknowledged: [], refused: [] };
  await Promise.all(
    options.clients.map(async ({ resource, prefix }) => {
      for (let batch = 0; !options.stopped(); batch++) {
        const codes = Array.from(
          { length: options.batchSize },
          (_, at) => `${prefix}${String(batch).padStart(5, '0')}-${at}`,
        );
        const key = `drill-${prefix}-${batch}`;
        const firstSentAt = Date.now();
        const answer = await sendUntilAnswered(
          options.instances,
          options.headers,
          resource,
          key,
          items(resource, codes),
          batch,
        );
        if (answer.status >= 200 && answer.status < 300) {
          results.acknowledged.push({
            key,
            resource,
            codes,
            status: answer.status,
            counts: countsOf(answer.body),
            firstSentAt,
            answeredAt: Date.now(),
            attempts: answer.attempts,
          });
        } else {
          results.refused.push({
            key,
            resource,
            codes,
            status: answer.status,
            message: JSON.stringify(answer.body),
          });
        }
      }
    }),
  );
  return results;
}

export interface Resent {
  /** The same answer as the first time: the batch's key and its write were both kept. */
  replayed: number;
  /** Not a replay, and the same counts: the write and its key were lost with the primary, written again. */
  writtenAgain: number;
  /** Any other answer: the batch's rows, and what came back. */
  other: string[];
}

/**
 * Every acknowledged batch sent once more with its key, as a client that never heard its answer
 * would: a kept key answers as the first time, a key lost with its write writes the batch again.
 */
export async function resendAcknowledged(
  instances: readonly string[],
  headers: Readonly<Record<string, string>>,
  acknowledged: readonly AcknowledgedBatch[],
  concurrency = 4,
): Promise<Resent> {
  const resent: Resent = { replayed: 0, writtenAgain: 0, other: [] };
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let at = next++; at < acknowledged.length; at = next++) {
        const batch = acknowledged[at]!;
        const answer = await sendUntilAnswered(
          instances,
          headers,
          batch.resource,
          batch.key,
          items(batch.resource, batch.codes),
          at,
        );
        const same =
          answer.status === batch.status &&
          JSON.stringify(countsOf(answer.body)) === JSON.stringify(batch.counts);
        if (same && answer.replayed) resent.replayed++;
        else if (same) resent.writtenAgain++;
        else resent.other.push(`${batch.key}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    }),
  );
  return resent;
}
