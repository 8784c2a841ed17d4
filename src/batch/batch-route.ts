import type {
  FastifyInstance,
  FastifyRequest,
  onRequestHookHandler,
  preParsingAsyncHookHandler,
} from 'fastify';
import type { Database } from '../db/database.js';
import { RawJson } from '../http/json-body.js';
import type { BatchMetrics } from '../http/metrics.js';
import { problems } from '../http/problems.js';
import type { BatchAdmission, BatchTicket } from './batch-admission.js';
import { checkBatchArray } from './batch-array.js';
import { processBatchBody, WORKER_BODY_BYTES } from './batch-worker-pool.js';
import { InvalidBatch, processBatch } from './process-batch.js';
import { bodyStream, receiveBody } from './receive-body.js';
import type { BatchResource } from './resource.js';
import type { BatchCounts } from './write-batch.js';

export interface BatchRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** Told the size and counts of every batch written (GET /metrics). */
  metrics?: BatchMetrics;
  /** Bounds the batches processed at once, per tenant and in all (src/batch/batch-admission.ts). */
  admission?: BatchAdmission | undefined;
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
      if (!admission.holdBytes(bytes, held)) throw problems.batchBodiesFull(admission.bytesRetryAfter());
      held += bytes;
    });
    // The client left once its body was sent: nothing to answer, and the batch must not be processed
    // outside the bound (the answer to this error is never read).
    if (gone) throw problems.batchBusy(1);
    ticket = admission.enter(request.tenantId);
    await ticket.admitted;
    tickets.set(request, ticket);
    return bodyStream(body);
  };
}

/** Registers POST {resource.path}: parse, check the array, validate, write, answer. */
export function registerBatchRoute(
  app: FastifyInstance,
  resource: BatchResource,
  deps: BatchRouteDeps,
): void {
  app.post(
    resource.path,
    {
      bodyLimit: resource.bodyLimit,
      // A large body's parse and check run in a worker thread: tens to thousands of ms otherwise.
      config: { rawJsonFrom: WORKER_BODY_BYTES },
      onRequest: deps.authenticate,
      ...(deps.admission ? { preParsing: admit(deps.admission, resource.bodyLimit) } : {}),
    },
    async (request, reply) => {
      const body = request.body;
      const work =
        body instanceof RawJson
          ? () => processBatchBody(deps.db, request.tenantId, resource, body.bytes)
          : () => processBatch(deps.db, request.tenantId, resource, checkBatchArray(body));
      let counts: BatchCounts;
      try {
        const ticket = tickets.get(request);
        counts = await (ticket ? ticket.run(work) : work());
      } catch (error) {
        if (error instanceof InvalidBatch) throw problems.invalidItems(error.errors);
        throw error;
      }
      // Every item is counted once: created, updated, or ignored (a repeat, or an existing key).
      const items = counts.created + counts.updated + counts.ignored;
      request.log.info({ resource: resource.name, items, ...counts }, 'batch written');
      deps.metrics?.batchWritten(resource.name, items, counts);
      return reply.code(201).send({ statusCode: 201, message: resource.message, ...counts });
    },
  );
}
