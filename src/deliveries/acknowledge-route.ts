import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { checkBatchArray } from '../batch/batch-array.js';
import type { Database } from '../db/database.js';
import { problems } from '../http/problems.js';
import { ACKNOWLEDGE_BODY_LIMIT, acknowledge, notDeliveryCodes } from './acknowledge.js';

export interface AcknowledgeRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
}

/** POST /v1/deliveries/acknowledge: the batch array rules, every element a delivery code, 200 with counts. */
export function registerAcknowledgeRoute(app: FastifyInstance, deps: AcknowledgeRouteDeps): void {
  app.post(
    '/v1/deliveries/acknowledge',
    { bodyLimit: ACKNOWLEDGE_BODY_LIMIT, onRequest: deps.authenticate },
    async (request, reply) => {
      const codes = checkBatchArray(request.body);
      const refused = notDeliveryCodes(codes);
      if (refused.length > 0) throw problems.invalidItems(refused);
      const { acknowledged, notFound } = await acknowledge(deps.db, request.tenantId, codes as string[]);
      return reply
        .code(200)
        .send({ statusCode: 200, message: 'Deliveries acknowledged', acknowledged, notFound });
    },
  );
}
