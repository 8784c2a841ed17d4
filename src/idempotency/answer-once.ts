import type { Database, Transaction } from '../db/database.js';
import { keepAnswer, keptAnswer, tryLockKey } from '../sql/idempotency.js';
import { IdempotencyKeyInProgress, IdempotencyKeyReused } from './idempotency-errors.js';

/** An answer as it is sent and kept: the status and the exact text of the JSON body. */
export interface Answer {
  status: number;
  body: string;
}

/** A request that carries an Idempotency-Key. */
export interface KeyedRequest {
  tenantId: number;
  key: string;
  /** requestHash of the request (src/http/idempotency-key-hook.ts). */
  requestHash: string;
}

export interface IdempotencySettings {
  /** How long an answer is kept (IDEMPOTENCY_TTL_SECONDS). */
  ttlSeconds: number;
}

/** Expired answers removed by each new one: more than one, so removal outpaces arrival. */
const REMOVE_EXPIRED_PER_ANSWER = 20;

/** How long a client should wait before asking again about a key in progress. */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;

/**
 * Keys in progress in this process. The advisory lock answers the 409 across instances; this set
 * answers it on a database with one connection (PGlite), whose transactions run one after another,
 * so a second request would otherwise wait for the first and replay it, never see it running.
 */
const running = new Set<string>();

/** A kept answer for this request, or the 422 of a key used with another request. */
function replay(kept: { requestHash: string; status: number; body: string }, request: KeyedRequest): Answer {
  if (kept.requestHash !== request.requestHash) throw new IdempotencyKeyReused();
  return { status: kept.status, body: kept.body };
}

/**
 * Runs a keyed request once (extensions.md 8). A kept answer is replayed (or the request refused with
 * 422 when it differs). Otherwise `prepare` runs outside any transaction (a batch's parse and check:
 * no connection is held meanwhile, and a replay never pays it), then, in one transaction: the key's
 * advisory lock (409 while another transaction holds it), a second look for a kept answer (one may
 * have committed since the first), the prepared work, which writes through the transaction it is
 * given, what `alongside` records of it (the activity), and its answer, kept unless it throws (a 5xx
 * is thrown, so never kept). A crash anywhere
 * before COMMIT leaves neither. `replayed` says whether the answer is a kept one.
 */
export async function answerOnce(
  db: Database,
  request: KeyedRequest,
  settings: IdempotencySettings,
  prepare: () => Promise<(tx: Transaction) => Promise<Answer>>,
  alongside?: (tx: Transaction, answer: Answer) => Promise<void>,
): Promise<{ answer: Answer; replayed: boolean }> {
  const { tenantId, key } = request;
  const id = `${tenantId}\u0000${key}`;
  // Checked before the lookup: on PGlite the lookup would wait for the running request's transaction
  // and replay it, never answer 409.
  if (running.has(id)) throw new IdempotencyKeyInProgress(IN_PROGRESS_RETRY_AFTER_SECONDS);
  // The usual retry finds its answer with this one statement, outside any transaction. Retries of a
  // finished request that arrive together all replay: a lookup does not mark the key as running.
  const kept = await keptAnswer(db, tenantId, key);
  if (kept) return { answer: replay(kept, request), replayed: true };
  // Another request with the key started while this one looked.
  if (running.has(id)) throw new IdempotencyKeyInProgress(IN_PROGRESS_RETRY_AFTER_SECONDS);
  running.add(id);
  try {
    const work = await prepare();
    return await db.transaction(async (tx) => {
      if (!(await tryLockKey(tx, tenantId, key))) {
        throw new IdempotencyKeyInProgress(IN_PROGRESS_RETRY_AFTER_SECONDS);
      }
      const committed = await keptAnswer(tx, tenantId, key);
      if (committed) return { answer: replay(committed, request), replayed: true };
      const answer = await work(tx);
      await alongside?.(tx, answer);
      await keepAnswer(
        tx,
        tenantId,
        key,
        { requestHash: request.requestHash, ...answer },
        settings.ttlSeconds,
        REMOVE_EXPIRED_PER_ANSWER,
      );
      return { answer, replayed: false };
    });
  } finally {
    running.delete(id);
  }
}
