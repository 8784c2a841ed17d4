import type { FastifyInstance } from 'fastify';
import { checkBatchArray } from '../batch/batch-array.js';
import { withRetry } from '../db/database.js';
import type { TextField } from '../fields/field.js';
import { problems } from '../http/problems.js';
import { deliveries } from '../resources/deliveries.js';
import type { ReadRouteDeps } from './read-routes.js';

/** A delivery code as the delivery field table defines it. */
const CODE_MAX = (deliveries.fields.code as TextField).max;
export const NOT_A_DELIVERY_CODE = `Item must be a delivery code: a string of 1 to ${CODE_MAX} characters`;
/** 10,000 codes of 30 four-byte characters, quoted, with separators, and room. */
export const ACKNOWLEDGE_BODY_LIMIT = 2 * 1024 * 1024;

/**
 * Marks the given deliveries as acknowledged (a data-modifying CTE always runs, referenced or not), in code order so concurrent calls lock rows in the
 * same order. Codes already acknowledged count as acknowledged again (idempotent); codes the tenant
 * does not have come back in notFound.
 */
const ACKNOWLEDGE_SQL = `WITH given AS (
  SELECT DISTINCT code FROM unnest($2::text[]) AS g(code)
), locked AS (
  SELECT d.code FROM deliveries d JOIN given USING (code)
  WHERE d.tenant_id = $1 AND d.acknowledged_at IS NULL
  ORDER BY d.code COLLATE "C"
  FOR UPDATE OF d
), acknowledged AS (
  UPDATE deliveries d SET acknowledged_at = (now() AT TIME ZONE 'UTC')
  FROM locked WHERE d.tenant_id = $1 AND d.code = locked.code
  RETURNING d.code
)
SELECT given.code
FROM given
WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant_id = $1 AND d.code = given.code)
ORDER BY given.code COLLATE "C"`;

/** POST /v1/deliveries/acknowledge (extensions.md 4). */
export function registerAcknowledge(app: FastifyInstance, deps: ReadRouteDeps): void {
  app.post(
    '/v1/deliveries/acknowledge',
    { bodyLimit: ACKNOWLEDGE_BODY_LIMIT, onRequest: deps.authenticate },
    async (request, reply) => {
      const codes = checkBatchArray(request.body);
      const errors = codes.flatMap((code, index) =>
        typeof code === 'string' &&
        code.trim() !== '' &&
        [...code].length <= CODE_MAX &&
        !code.includes('\u0000')
          ? []
          : [{ index, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] }],
      );
      if (errors.length > 0) throw problems.invalidItems(errors);
      const distinct = [...new Set(codes as string[])];
      const missing = await withRetry(() =>
        deps.db.query<{ code: string }>(ACKNOWLEDGE_SQL, [request.tenantId, distinct]),
      );
      const notFound = missing.map((row) => row.code);
      // An upper bound (codes acknowledged before count again): enough for the upkeep's threshold.
      await deps.db.wrote('deliveries', distinct.length - notFound.length);
      return reply.code(200).send({
        statusCode: 200,
        message: 'Deliveries acknowledged',
        acknowledged: distinct.length - notFound.length,
        notFound,
      });
    },
  );
}
