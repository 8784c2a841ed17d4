import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Database, Transaction } from '../../db/database.js';
import { parseJsonBytes } from '../../fields/json-text.js';
import { checkIdempotencyKey } from '../../http/idempotency-key-hook.js';
import { RawJson } from '../../http/json-body.js';
import { answerKeyedPost, sendAnswer } from '../../http/keyed-reply.js';
import { HttpProblem, problems } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import type { Answer, IdempotencySettings } from '../../idempotency/answer-once.js';
import { checkQuery } from '../../read/query-params.js';
import {
  deleteEndpoint,
  selectAttempts,
  selectEndpoint,
  selectEndpoints,
} from '../../sql/webhook-endpoints.js';
import { checkCreate, checkPatch, type FieldError } from '../../webhooks/endpoint-input.js';
import {
  changeEndpoint,
  checkUrlReachable,
  createEndpoint,
  type EndpointContext,
  notFound,
  prepareWrite,
  presentEndpoint,
  replayEndpoint,
  retryEndpoint,
  rotateEndpointSecret,
  WebhookRefusal,
} from '../../webhooks/endpoints.js';
import { pingEndpoint } from '../../webhooks/ping.js';
import { DELIVERIES_QUERY, webhookRoutes as declared, WEBHOOKS_PATH } from './webhook-schemas.js';

export { WEBHOOKS_PATH };

/** The management bodies are small: a URL of 2,048 characters and a few fields. */
const BODY_LIMIT = 16 * 1024;

export interface WebhookRouteDeps {
  db: Database;
  authenticate: onRequestHookHandler;
  idempotency: IdempotencySettings;
  context: EndpointContext & { timeoutMs: number; userAgent: string };
  /** A delivery was made due now: the delivery work runs a round without waiting for its timer. */
  deliveriesDue(): void;
}

/** The request's JSON body, parsed from its bytes (kept as bytes: a keyed request hashes them). */
function bodyOf(request: FastifyRequest): unknown {
  const body = request.body;
  if (!(body instanceof RawJson)) return body;
  try {
    return parseJsonBytes(body.bytes);
  } catch {
    throw problems.invalidJson();
  }
}

const bytesOf = (request: FastifyRequest) =>
  request.body instanceof RawJson ? request.body.bytes : undefined;

const json = (status: number, body: unknown): Answer => ({ status, body: JSON.stringify(body) });

/** A checked body's problems as the read side's 400 (extensions.md 6). */
const invalid = (errors: readonly FieldError[]) => new WebhookRefusal(400, errors);

/** The webhook endpoints' management API (extensions.md 11). A tenant sees and changes only its own. */
export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookRouteDeps): void {
  const { db, context } = deps;
  const keyed = {
    bodyLimit: BODY_LIMIT,
    config: { rawJsonFrom: 0 },
    onRequest: [deps.authenticate, checkIdempotencyKey],
    validatorCompiler: checkedByHandler,
  };
  const plain = { bodyLimit: BODY_LIMIT, onRequest: deps.authenticate, validatorCompiler: checkedByHandler };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  const answerPost = (
    request: FastifyRequest,
    reply: FastifyReply,
    check: () => Promise<(q: Database | Transaction) => Promise<Answer>>,
  ) => answerKeyedPost(request, reply, db, deps.idempotency, bytesOf(request), check);

  app.post(WEBHOOKS_PATH, { ...keyed, schema: declared.create.schema }, async (request, reply) => {
    const { answer, replayed } = await answerPost(request, reply, async () => {
      const checked = checkCreate(bodyOf(request));
      if (!checked.ok) throw invalid(checked.errors);
      await checkUrlReachable(checked.value.url, context);
      const prepared = await prepareWrite(context);
      return async (q) => json(201, await createEndpoint(q, request.tenantId, checked.value, prepared));
    });
    return sendAnswer(reply, answer, replayed);
  });

  app.get(WEBHOOKS_PATH, { ...plain, schema: declared.list.schema }, async (request) => {
    const rows = await selectEndpoints(db, request.tenantId);
    return { data: rows.map(presentEndpoint) };
  });

  app.get(declared.get.url, { ...plain, schema: declared.get.schema }, async (request) => {
    const row = await selectEndpoint(db, request.tenantId, idOf(request));
    if (!row) throw notFound();
    return presentEndpoint(row);
  });

  app.patch(
    declared.change.url,
    { ...plain, config: { rawJsonFrom: 0 }, schema: declared.change.schema },
    async (request) => {
      const checked = checkPatch(bodyOf(request));
      if (!checked.ok) throw invalid(checked.errors);
      if (checked.value.url) await checkUrlReachable(checked.value.url, context);
      return changeEndpoint(db, request.tenantId, idOf(request), checked.value, context);
    },
  );

  app.delete(declared.delete.url, { ...plain, schema: declared.delete.schema }, async (request, reply) => {
    if (!(await deleteEndpoint(db, request.tenantId, idOf(request)))) throw notFound();
    return reply.code(204).send();
  });

  app.post(
    declared.rotateSecret.url,
    { ...keyed, schema: declared.rotateSecret.schema },
    async (request, reply) => {
      const { answer, replayed } = await answerPost(request, reply, async () => {
        const prepared = await prepareWrite(context);
        return async (q) =>
          json(200, await rotateEndpointSecret(q, request.tenantId, idOf(request), prepared));
      });
      return sendAnswer(reply, answer, replayed);
    },
  );

  app.post(declared.replay.url, { ...keyed, schema: declared.replay.schema }, async (request, reply) => {
    const { answer, replayed } = await answerPost(request, reply, async () => {
      const body = bodyOf(request) ?? {};
      const generation = await context.generation();
      return async (q) => {
        await replayEndpoint(q, request.tenantId, idOf(request), body, { generation });
        return json(202, { statusCode: 202, message: 'Replay scheduled' });
      };
    });
    return sendAnswer(reply, answer, replayed);
  });

  // Making a delivery due now twice is making it due now: the header is checked like every POST's
  // and the answer not kept, so a repeat retries again (docs/decisions/0137-webhook-retry-now.md).
  app.post(
    declared.retry.url,
    { ...plain, onRequest: [deps.authenticate, checkIdempotencyKey], schema: declared.retry.schema },
    async (request, reply) => {
      await retryEndpoint(db, request.tenantId, idOf(request));
      deps.deliveriesDue();
      return reply.code(202).send({ statusCode: 202, message: 'Retry scheduled' });
    },
  );

  // A ping changes nothing: its header is checked like every POST's, and its answer never kept (a
  // retry pings again, which is what a retry of a ping means).
  app.post(
    declared.ping.url,
    { ...plain, onRequest: [deps.authenticate, checkIdempotencyKey], schema: declared.ping.schema },
    async (request) => pingEndpoint(db, request.tenantId, idOf(request), context),
  );

  app.get(declared.deliveries.url, { ...plain, schema: declared.deliveries.schema }, async (request) => {
    const checked = checkQuery(DELIVERIES_QUERY, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const id = idOf(request);
    if (!(await selectEndpoint(db, request.tenantId, id))) throw notFound();
    return { data: await selectAttempts(db, id, checked.values.limit as number) };
  });
}
