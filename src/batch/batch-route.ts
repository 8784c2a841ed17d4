import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Database } from '../db/database.js';
import type { BatchMetrics } from '../http/metrics.js';
import { problems } from '../http/problems.js';
import { checkBatchArray } from './batch-array.js';
import { InvalidBatch, processBatch } from './process-batch.js';
import type { BatchResource } from './resource.js';
import type { BatchCounts } from './write-batch.js';

export interface BatchRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** Told the size and counts of every batch written (GET /metrics). */
  metrics?: BatchMetrics;
}

/** Registers POST {resource.path}: parse, check the array, validate, write, answer. */
export function registerBatchRoute(
  app: FastifyInstance,
  resource: BatchResource,
  deps: BatchRouteDeps,
): void {
  app.post(
    resource.path,
    { bodyLimit: resource.bodyLimit, onRequest: deps.authenticate },
    async (request, reply) => {
      const items = checkBatchArray(request.body);
      let counts: BatchCounts;
      try {
        counts = await processBatch(deps.db, request.tenantId, resource, items);
      } catch (error) {
        if (error instanceof InvalidBatch) throw problems.invalidItems(error.errors);
        throw error;
      }
      request.log.info({ resource: resource.name, items: items.length, ...counts }, 'batch written');
      deps.metrics?.batchWritten(resource.name, items.length, counts);
      return reply.code(201).send({ statusCode: 201, message: resource.message, ...counts });
    },
  );
}
