import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { OneAtATime } from '../../admission/one-at-a-time.js';
import { type ArrayRule, BatchArrayRefused, InvalidBatch, type ItemError } from '../../batch/batch-errors.js';
import {
  checkAcknowledgeBody,
  checkRejectBody,
  WORKER_BODY_BYTES,
} from '../../body-threads/batch-worker-pool.js';
import type { Database, Queryable, Transaction } from '../../db/database.js';
import {
  type AcknowledgeCheck,
  acknowledge,
  checkAcknowledgeBytes,
  checkAcknowledgeValue,
  noteDeliveriesChanged,
} from '../../deliveries/acknowledge.js';
import {
  checkRejectBytes,
  checkRejectValue,
  MAX_REJECTIONS,
  type RejectCheck,
  reject,
  requeue,
} from '../../deliveries/rejections.js';
import { checkIdempotencyKey } from '../../http/idempotency-key-hook.js';
import { RawJson } from '../../http/json-body.js';
import {
  answerRequest,
  DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  refusedWork,
  sendAnswer,
} from '../../http/keyed-reply.js';
import { checkedByHandler, type RouteDeclaration } from '../../http/route-schema.js';
import type { Answer, IdempotencySettings } from '../../idempotency/answer-once.js';
import { MAX_BATCH_ITEMS } from '../../resources/batch-resource.js';
import { deliveryStateRoutes as declared } from './delivery-state-schemas.js';

export interface DeliveryStateRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** How long Idempotency-Key answers are kept (default 7 days). */
  idempotency?: IdempotencySettings | undefined;
}

/**
 * Large bodies go to the worker thread one at a time per tenant: the pool's two threads also serve
 * the admitted batches (src/admission/batch-admission.ts), and one tenant's flood of large bodies must
 * wait on itself, not take both from everyone's batches.
 */
const workerTurns = new OneAtATime<number>();

/** A body the endpoint refuses: an array rule it breaks, or its invalid elements. */
type Refused = { kind: 'array'; rule: ArrayRule } | { kind: 'invalid'; errors: ItemError[] };

/**
 * One endpoint that changes the state of the tenant's deliveries by an array body (extensions.md 4
 * and 13): how its body is checked (inline, or from WORKER_BODY_BYTES on in the worker thread, off the
 * event loop every tenant shares) and what the checked body does.
 */
interface DeliveryStateEndpoint<T> {
  /** Its route, body limit and body's shape, declared once (src/routes/v1/delivery-state-schemas.ts). */
  route: RouteDeclaration & { bodyLimit: number };
  /** The most elements the array may have (the 400 of tooManyItems names it). */
  maxItems: number;
  checkValue(body: unknown): Refused | T;
  checkBytes(bytes: Buffer): Refused | T;
  checkInWorker(bytes: Buffer): Promise<Refused | T>;
  /** Applies the checked body; `changed` tells the upkeep, `answer` is the 200's fields. */
  apply(
    q: Queryable,
    tenantId: number,
    checked: T,
    inTransaction: boolean,
  ): Promise<{ changed: number; answer: Record<string, unknown> }>;
}

type Codes = Extract<AcknowledgeCheck, { kind: 'codes' }>;
type Rejections = Extract<RejectCheck, { kind: 'rejections' }>;

const ACKNOWLEDGE: DeliveryStateEndpoint<Codes> = {
  route: declared.acknowledge,
  maxItems: MAX_BATCH_ITEMS,
  checkValue: checkAcknowledgeValue,
  checkBytes: checkAcknowledgeBytes,
  checkInWorker: checkAcknowledgeBody,
  async apply(q, tenantId, { codes }, inTransaction) {
    const result = await acknowledge(q, tenantId, codes, inTransaction);
    return { changed: result.acknowledged, answer: { message: 'Deliveries acknowledged', ...result } };
  },
};

const REJECT: DeliveryStateEndpoint<Rejections> = {
  route: declared.reject,
  maxItems: MAX_REJECTIONS,
  checkValue: checkRejectValue,
  checkBytes: checkRejectBytes,
  checkInWorker: checkRejectBody,
  async apply(q, tenantId, { codes, reasons }, inTransaction) {
    const result = await reject(q, tenantId, codes, reasons, inTransaction);
    return { changed: result.rejected, answer: { message: 'Deliveries rejected', ...result } };
  },
};

/** The requeue takes the acknowledgement's body: 1 to 10,000 delivery codes. */
const REQUEUE: DeliveryStateEndpoint<Codes> = {
  ...ACKNOWLEDGE,
  route: declared.requeue,
  async apply(q, tenantId, { codes }, inTransaction) {
    const result = await requeue(q, tenantId, codes, inTransaction);
    return { changed: result.requeued, answer: { message: 'Deliveries requeued', ...result } };
  },
};

/** The body checked; the 400 of the array rules or of invalid elements is thrown. */
async function checked<T>(endpoint: DeliveryStateEndpoint<T>, tenantId: number, body: unknown): Promise<T> {
  let check: Refused | T;
  if (!(body instanceof RawJson)) check = endpoint.checkValue(body);
  else if (body.bytes.length < WORKER_BODY_BYTES) check = endpoint.checkBytes(body.bytes);
  else {
    const { bytes } = body;
    check = await workerTurns.run(tenantId, () => endpoint.checkInWorker(bytes));
  }
  const refused = check as Refused;
  if (refused.kind === 'array') throw new BatchArrayRefused(refused.rule, endpoint.maxItems);
  if (refused.kind === 'invalid') throw new InvalidBatch(refused.errors);
  return check as T;
}

/**
 * POST of one endpoint: the array rules, every element checked, 200 with counts; once per
 * Idempotency-Key (extensions.md 8), the change and its kept answer in one transaction.
 */
function registerDeliveryStateRoute<T>(
  app: FastifyInstance,
  endpoint: DeliveryStateEndpoint<T>,
  deps: DeliveryStateRouteDeps,
): void {
  const settings = deps.idempotency ?? { ttlSeconds: DEFAULT_IDEMPOTENCY_TTL_SECONDS };
  app.post(
    endpoint.route.url,
    {
      bodyLimit: endpoint.route.bodyLimit,
      schema: endpoint.route.schema,
      // The array rules and the elements are checked by the handler, inside the key's work.
      validatorCompiler: checkedByHandler,
      // Bytes, parsed here: a keyed request's hash covers the body exactly.
      config: { rawJsonFrom: 0 },
      onRequest: [deps.authenticate, checkIdempotencyKey],
    },
    async (request, reply) => {
      const body = request.body;
      let changed = 0;
      const prepare = async () => {
        let given: T;
        try {
          given = await checked(endpoint, request.tenantId, body);
        } catch (error) {
          return refusedWork(error);
        }
        return async (tx: Transaction | undefined): Promise<Answer> => {
          const result = await endpoint.apply(tx ?? deps.db, request.tenantId, given, tx !== undefined);
          changed = result.changed;
          return { status: 200, body: JSON.stringify({ statusCode: 200, ...result.answer }) };
        };
      };
      const bytes = body instanceof RawJson ? body.bytes : undefined;
      const { answer, replayed } = await answerRequest(request, reply, deps.db, settings, bytes, prepare);
      // After the commit: the upkeep may VACUUM, which no transaction may hold.
      if (!replayed && changed > 0) await noteDeliveriesChanged(deps.db, changed);
      return sendAnswer(reply, answer, replayed);
    },
  );
}

/** POST /v1/deliveries/acknowledge, /reject and /requeue (extensions.md 4 and 13). */
export function registerDeliveryStateRoutes(app: FastifyInstance, deps: DeliveryStateRouteDeps): void {
  registerDeliveryStateRoute(app, ACKNOWLEDGE, deps);
  registerDeliveryStateRoute(app, REJECT, deps);
  registerDeliveryStateRoute(app, REQUEUE, deps);
}
