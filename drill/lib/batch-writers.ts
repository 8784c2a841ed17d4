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

export async function runWriters(options: WriterOptions): Promise<WriterResults> {
  const results: WriterResults = { acknowledged: [], refused: [] };
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
  await Promise.all(
    options.clients.map(async ({ resource, prefix }) => {
      for (let batch = 0; !options.stopped(); batch++) {
        const codes = Array.from(
          { length: options.batchSize },
          (_, at) => `${prefix}${String(batch).padStart(5, '0')}-${at}`,
        );
        const key = `drill-${prefix}-${batch}`;
        const body = items(resource, codes);
        const firstSentAt = Date.now();
        for (let attempt = 1; ; attempt++) {
          const instance = options.instances[(batch + attempt) % options.instances.length]!;
          const answer = await call(
            instance,
            'batch',
            'POST',
            `/api/${resource}/batch-create`,
            {
              ...options.headers,
              'idempotency-key': key,
            },
            body,
          );
          if (answer.status >= 200 && answer.status < 300) {
            const counts = answer.body as { created: number; updated: number; ignored: number };
            results.acknowledged.push({
              key,
              resource,
              codes,
              status: answer.status,
              counts: { created: counts.created, updated: counts.updated, ignored: counts.ignored },
              firstSentAt,
              answeredAt: Date.now(),
              attempts: attempt,
            });
            break;
          }
          if (answer.status >= 400 && answer.status < 500 && answer.status !== 409 && answer.status !== 429) {
            results.refused.push({
              key,
              resource,
              codes,
              status: answer.status,
              message: JSON.stringify(answer.body),
            });
            break;
          }
          await sleep(RETRY_MS);
        }
      }
    }),
  );
  return results;
}
