import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Database } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import { problems } from '../http/problems.js';
import { ValidationCrash } from '../http/server-errors.js';
import { checkBatchArray } from './batch-array.js';
import type { BatchResource } from './resource.js';
import { markUnknownProducts, productCodes, type ValidatedBatch, validateItems } from './validate-items.js';
import { writeBatch } from './write-batch.js';
import { MISSING_PRODUCTS_SQL } from './write-sql.js';

export interface BatchRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
}

/** Registers POST {resource.path}: parse, check the array, validate, check products, write, answer. */
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
      let batch: ValidatedBatch;
      try {
        batch = validateItems(resource, items);
      } catch (error) {
        throw new ValidationCrash(error);
      }
      const codes = productCodes(resource, batch);
      if (codes.length > 0) {
        const missing = await deps.db.query<{ code: string }>(MISSING_PRODUCTS_SQL, [
          request.tenantId,
          codes,
        ]);
        markUnknownProducts(resource, batch, new Set(missing.map((row) => row.code)));
      }
      if (batch.errors.length > 0) throw problems.invalidItems(batch.errors);

      const counts = await writeBatch(deps.db, request.tenantId, resource, batch.rows as FieldValue[][]);
      request.log.info({ resource: resource.name, items: items.length, ...counts }, 'batch written');
      return reply.code(201).send({ statusCode: 201, message: resource.message, ...counts });
    },
  );
}
