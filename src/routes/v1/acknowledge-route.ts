import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { BatchArrayRefused, InvalidBatch } from '../../batch/batch-errors.js';
import type { Database, Transaction } from '../../db/database.js';
import {
  ACKNOWLEDGE_BODY_LIMIT,
  type AcknowledgeCheck,
  acknowledge,
  checkAcknowledgeBytes,
  checkAcknowledgeValue,
  noteAcknowledged,
} from '../../deliveries/acknowledge.js';
import { OneAtATime } from '../../deliveries/one-at-a-time.js';
import { problemOf } from '../../http/domain-problems.js';
import { checkIdempotencyKey } from '../../http/idempotency-key-hook.js';
import { RawJson } from '../../http/json-body.js';
import {
  answerRequest,
  DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  problemAnswer,
  sendAnswer,
} from '../../http/keyed-reply.js';
import type { Answer, IdempotencySettings } from '../../idempotency/answer-once.js';
import { checkAcknowledgeBody, WORKER_BODY_BYTES } from '../../workers/batch-worker-pool.js';

export interface AcknowledgeRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** How long Idempotency-Key answers are kept (default 7 days). */
  idempotency?: IdempotencySettings | undefined;
}

/**
 * Large acknowledgement bodies go to the worker thread one at a time per tenant: the pool's two
 * threads also serve the admitted batches (src/batch/batch-admission.ts), and one tenant's flood of
 * 2 MiB bodies must wait on itself, not take both from everyone's batches.
 */
const workerTurns = new OneAtATime<number>();

/**
 * The codes of the body, or the 400 of the array rules or of the elements that are not codes. A body
 * from WORKER_BODY_BYTES on is checked in the worker thread, off the event loop every tenant shares.
 */
async function codesOf(tenantId: number, body: unknown): Promise<string[]> {
  let check: AcknowledgeCheck;
  if (!(body instanceof RawJson)) check = checkAcknowledgeValue(body);
  else if (body.bytes.length < WORKER_BODY_BYTES) check = checkAcknowledgeBytes(body.bytes);
  else {
    const { bytes } = body;
    check = await workerTurns.run(tenantId, () => checkAcknowledgeBody(bytes));
  }
  if (check.kind === 'array') throw new BatchArrayRefused(check.rule);
  if (check.kind === 'invalid') throw new InvalidBatch(check.errors);
  return check.codes;
}

/**
 * POST /v1/deliveries/acknowledge: the batch array rules, every element a delivery code, 200 with
 * counts; once per Idempotency-Key (extensions.md 8), the acknowledgement and its kept answer in one
 * transaction.
 */
export function registerAcknowledgeRoute(app: FastifyInstance, deps: AcknowledgeRouteDeps): void {
  const settings = deps.idempotency ?? { ttlSeconds: DEFAULT_IDEMPOTENCY_TTL_SECONDS };
  app.post(
    '/v1/deliveries/acknowledge',
    {
      bodyLimit: ACKNOWLEDGE_BODY_LIMIT,
      // Bytes, parsed here: a keyed request's hash covers the body exactly.
      config: { rawJsonFrom: 0 },
      onRequest: [deps.authenticate, checkIdempotencyKey],
    },
    async (request, reply) => {
      const body = request.body;
      let acknowledged = 0;
      const prepare = async () => {
        let codes: string[];
        try {
          codes = await codesOf(request.tenantId, body);
        } catch (error) {
          // The 400s of the array rules and of elements that are not codes are answers like any
          // other (kept for a key).
          const problem = problemOf(error);
          if (problem?.statusCode !== 400) throw error;
          const answer = problemAnswer(problem);
          return async () => answer;
        }
        return async (tx: Transaction | undefined): Promise<Answer> => {
          const result = await acknowledge(tx ?? deps.db, request.tenantId, codes, tx !== undefined);
          acknowledged = result.acknowledged;
          const answer = { statusCode: 200, message: 'Deliveries acknowledged', ...result };
          return { status: 200, body: JSON.stringify(answer) };
        };
      };
      const bytes = body instanceof RawJson ? body.bytes : undefined;
      const { answer, replayed } = await answerRequest(request, deps.db, settings, bytes, prepare);
      // After the commit: the upkeep may VACUUM, which no transaction may hold.
      if (!replayed && acknowledged > 0) await noteAcknowledged(deps.db, acknowledged);
      return sendAnswer(reply, answer, replayed);
    },
  );
}
