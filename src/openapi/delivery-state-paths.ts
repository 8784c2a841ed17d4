import { NOT_A_DELIVERY_CODE } from '../deliveries/acknowledge.js';
import { checkRejectValue, REJECTION_ITEM } from '../deliveries/rejections.js';
import { problems } from '../http/problems.js';
import type { RouteDeclaration } from '../http/route-schema.js';
import { deliveries } from '../resources/deliveries.js';
import { deliveryStateRoutes } from '../routes/v1/delivery-state-schemas.js';
import { arrayRuleExamples, requestContext } from './batch-paths.js';
import { bodyTooLargeResponse } from './errors.js';
import { objectSchema } from './field-schemas.js';
import {
  idempotencyKeyHeader,
  idempotencyResponses,
  invalidKeyExample,
  replayedHeader,
} from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { declaredPaths, type OperationAnswers } from './route-operations.js';

/*
 * The endpoints that change a delivery's state (extensions.md 4 and 13): acknowledge, reject and
 * requeue. What each takes is declared on its route (src/routes/v1/delivery-state-schemas.ts); here
 * what each answers: 200 with a count and the codes not found, the batch endpoints' array refusals.
 */

/** The 200 of one endpoint: its message and the name of its count. */
function resultSchema(message: string, count: string, meaning: string): JsonSchema {
  return {
    type: 'object',
    required: ['statusCode', 'message', count, 'notFound'],
    properties: {
      statusCode: { const: 200 },
      message: { const: message },
      [count]: { type: 'integer', minimum: 0, description: meaning },
      notFound: { type: 'array', items: { type: 'string' }, description: 'the other codes, sorted' },
    },
  };
}

/** The answers of the three endpoints. */
export function deliveryStateSchemas(): Record<string, JsonSchema> {
  return {
    AcknowledgeResult: resultSchema(
      'Deliveries acknowledged',
      'acknowledged',
      'distinct given codes the tenant has (newly or already acknowledged)',
    ),
    RejectResult: resultSchema(
      'Deliveries rejected',
      'rejected',
      'distinct given codes of deliveries pending or rejected before, rejected now',
    ),
    RequeueResult: resultSchema(
      'Deliveries requeued',
      'requeued',
      'distinct given codes of rejected deliveries',
    ),
    Rejection: objectSchema(REJECTION_ITEM.fields, requestContext(deliveries), {
      description: 'A delivery the ERP cannot take, and why.',
    }),
  };
}

const notACode = {
  summary: 'An element that is not a delivery code',
  value: problems
    .invalidItems([{ index: 1, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] }])
    .body(),
};

/** What one endpoint answers: its 200's schema and example, the 400 of an invalid element. */
function answersOf(
  route: RouteDeclaration,
  result: string,
  answer: Record<string, unknown>,
  invalid: { summary: string; value: unknown },
  requestExample: unknown[],
): OperationAnswers {
  const { maxItems } = route.schema.body as { maxItems: number };
  return {
    parameters: [idempotencyKeyHeader],
    requestExample,
    responses: {
      '200': {
        description: 'Done.',
        headers: replayedHeader,
        content: { 'application/json': { schema: schemaRef(result), example: answer } },
      },
      '400': {
        description: 'Invalid JSON, an array rule broken, or invalid elements.',
        content: {
          'application/json': {
            schema: { oneOf: [schemaRef('BatchErrors'), schemaRef('ParameterErrors')] },
            examples: { invalidElement: invalid, ...arrayRuleExamples(maxItems), ...invalidKeyExample },
          },
        },
      },
      ...idempotencyResponses,
      '401': responseRef('Unauthorized'),
      '429': responseRef('TooManyRequests'),
      '413': bodyTooLargeResponse(route.bodyLimit!),
      '415': responseRef('UnsupportedMediaType'),
      '500': responseRef('ServerError'),
      '503': responseRef('DatabaseUnavailable'),
    },
  };
}

/** POST /v1/deliveries/acknowledge, /reject and /requeue (extensions.md 4 and 13). */
export function deliveryStatePaths(): Record<string, OpenApiObject> {
  const { acknowledge, reject, requeue } = deliveryStateRoutes;
  const invalidRejection = checkRejectValue([{ code: 'DEL-0001', reason: '' }]);
  return declaredPaths([acknowledge, reject, requeue], {
    acknowledgeDeliveries: answersOf(
      acknowledge,
      'AcknowledgeResult',
      { statusCode: 200, message: 'Deliveries acknowledged', acknowledged: 1, notFound: ['DEL-0002'] },
      notACode,
      ['DEL-0001', 'DEL-0002'],
    ),
    rejectDeliveries: answersOf(
      reject,
      'RejectResult',
      { statusCode: 200, message: 'Deliveries rejected', rejected: 1, notFound: [] },
      {
        summary: 'An element without a reason',
        value: problems
          .invalidItems(invalidRejection.kind === 'invalid' ? invalidRejection.errors : [])
          .body(),
      },
      [{ code: 'DEL-0001', reason: 'Customer C-77 does not exist in the ERP' }],
    ),
    requeueDeliveries: answersOf(
      requeue,
      'RequeueResult',
      { statusCode: 200, message: 'Deliveries requeued', requeued: 1, notFound: [] },
      notACode,
      ['DEL-0001'],
    ),
  });
}
