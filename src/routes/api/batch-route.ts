import type {
  FastifyInstance,
  FastifyRequest,
  onRequestHookHandler,
  preParsingAsyncHookHandler,
} from 'fastify';
import { type BatchAdmission, BatchNotAdmitted, type BatchTicket } from '../../admission/batch-admission.js';
import { batchOptions } from '../../batch/batch-options.js';
import type { CheckedBatch } from '../../batch/check-block.js';
import { answerChecked, type BatchResult } from '../../batch/write-block.js';
import { checkBatchBody } from '../../body-threads/batch-worker-pool.js';
import type { Database, Transaction } from '../../db/database.js';
import { activityOfWrite, markRecorded, noteActivity } from '../../http/activity-recording.js';
import { idempotencyKeyOf } from '../../http/idempotency-key-hook.js';
import { RawJson } from '../../http/json-body.js';
import {
  answerRequest,
  DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  recordedByItsWrite,
  refusedWork,
  sendAnswer,
} from '../../http/keyed-reply.js';
import type { BatchMetrics } from '../../http/metrics.js';
import { bodyStream, receiveBody } from '../../http/receive-body.js';
import { checkedByHandler } from '../../http/route-schema.js';
import type { Answer, IdempotencySettings } from '../../idempotency/answer-once.js';
import type { BatchResource } from '../../resources/batch-resource.js';
import { batchAnswer, WRITTEN } from './batch-reply.js';
import { batchQuery } from './batch-schemas.js';

export interface BatchRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** Told the size and counts of every batch written (GET /metrics). */
  metrics?: BatchMetrics;
  /** Bounds the batches processed at once, per tenant and in all (src/admission/batch-admission.ts). */
  admission?: BatchAdmission | undefined;
  /** How long Idempotency-Key answers are kept (default 7 days). */
  idempotency?: IdempotencySettings | undefined;
}

/** Each admitted request's place, from the preParsing hook to the handler. */
const tickets = new WeakMap<FastifyRequest, BatchTicket>();

/**
 * Before the body is parsed (and after the guard set the tenant): refuse at once (429) a tenant with
 * too many batches in progress; receive the body; wait for a place, or refuse (503 after a long
 * wait). The place is given back once the answer is sent or the connection closed, and the work done
 * (BatchTicket.run).
 */
function admit(admission: BatchAdmission, bodyLimit: number): preParsingAsyncHookHandler {
  return async (request, reply, payload) => {
    const depart = admission.arrive(request.tenantId);
    let ticket: BatchTicket | undefined;
    let gone = false;
    // The body's bytes count against the process's budget until the batch leaves.
    let held = 0;
    reply.raw.once('close', () => {
      gone = true;
      depart();
      ticket?.closed();
      admission.releaseBytes(held);
      held = 0;
    });
    const body = await receiveBody(payload, bodyLimit, request.headers['content-length'], (bytes) => {
      if (!admission.holdBytes(bytes, held)) {
        throw new BatchNotAdmitted('bodiesFull', admission.bytesRetryAfter());
      }
      held += bytes;
    });
    // The client left once its body was sent: nothing to answer, and the batch must not be processed
    // outside the bound (the answer to this error is never read).
    if (gone) throw new BatchNotAdmitted('busy', 1);
    ticket = admission.enter(request.tenantId, body.byteLength);
    await ticket.admitted;
    tickets.set(request, ticket);
    return bodyStream(body);
  };
}

/**
 * Before the body is read: a malformed Idempotency-Key or an unknown value of outcomes, dry_run or
 * on_invalid is refused at once (400), after the guard and before the batch waits for its turn.
 */
const checkHeadersAndQuery: onRequestHookHandler = async (request) => {
  idempotencyKeyOf(request);
  batchOptions(request.query);
};

/** Registers POST {resource.path}: parse, check the array, validate, write, answer (once per Idempotency-Key). */
export function registerBatchRoute(
  app: FastifyInstance,
  resource: BatchResource,
  deps: BatchRouteDeps,
): void {
  const settings = deps.idempotency ?? { ttlSeconds: DEFAULT_IDEMPOTENCY_TTL_SECONDS };
  app.post(
    resource.path,
    {
      bodyLimit: resource.bodyLimit,
      // Every body reaches the handler as bytes: a keyed request's hash covers them exactly, and a
      // large one is parsed and checked in a worker thread (tens to thousands of ms otherwise).
      config: { rawJsonFrom: 0, contractBatch: true },
      // The options' declaration, checked by batchOptions in the hook below (a 400 before the body).
      schema: { querystring: batchQuery },
      validatorCompiler: checkedByHandler,
      onRequest: [deps.authenticate, checkHeadersAndQuery],
      ...(deps.admission ? { preParsing: admit(deps.admission, resource.bodyLimit) } : {}),
    },
    async (request, reply) => {
      const options = batchOptions(request.query);
      const body = request.body;
      let result: BatchResult | undefined;
      const prepare = async () => {
        let checked: CheckedBatch;
        try {
          checked = await checkBatchBody(
            resource,
            body instanceof RawJson ? body.bytes : body,
            deps.db.statementRows,
            options,
          );
        } catch (error) {
          return refusedWork(error);
        }
        // Without a key (no tx) the write statement records the request itself.
        return recordedByItsWrite(async (tx: Transaction | undefined): Promise<Answer> => {
          const activity = tx ? undefined : activityOfWrite(request, WRITTEN, () => reply.elapsedTime);
          const target = { db: deps.db, tx, activity };
          result = await answerChecked(target, request.tenantId, resource, checked, options);
          if (result.kind === 'done') {
            const { created, updated, ignored } = result.counts;
            noteActivity(request, { items: created + updated + ignored, created, updated, ignored });
            if (result.recorded) markRecorded(request);
          }
          return batchAnswer(resource, result, options);
        });
      };
      const bytes = body instanceof RawJson ? body.bytes : undefined;
      const run = () => answerRequest(request, reply, deps.db, settings, bytes, prepare);
      const ticket = tickets.get(request);
      const { answer, replayed } = await (ticket ? ticket.run(run) : run());
      const done = result as BatchResult | undefined;
      if (!replayed && done?.kind === 'done' && done.written) {
        const { counts } = done;
        // Told after the commit: the upkeep may VACUUM, which no transaction may hold.
        for (const { table, rows } of done.written) await deps.db.wrote(table, rows);
        // Every item is counted once: created, updated, or ignored (a repeat, or an existing key).
        const items = counts.created + counts.updated + counts.ignored;
        request.log.info({ resource: resource.name, items, ...counts }, 'batch written');
        deps.metrics?.batchWritten(resource.name, items, counts);
      }
      return sendAnswer(reply, answer, replayed);
    },
  );
}
