import { ACKNOWLEDGE_BODY_LIMIT, NOT_A_DELIVERY_CODE } from '../deliveries/acknowledge.js';
import {
  checkRejectValue,
  MAX_REJECTIONS,
  REJECT_BODY_LIMIT,
  REJECTION_ITEM,
} from '../deliveries/rejections.js';
import { problems } from '../http/problems.js';
import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { deliveries } from '../resources/deliveries.js';
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
import { apiSecurity } from './security.js';

/*
 * The endpoints that change a delivery's state (extensions.md 4 and 13): acknowledge, reject and
 * requeue. One array body each, the batch endpoints' array rules, an Idempotency-Key, 200 with a
 * count and the codes not found.
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

interface Endpoint {
  path: string;
  operationId: string;
  summary: string;
  description: string;
  bodyLimit: number;
  maxItems: number;
  items: JsonSchema;
  example: unknown[];
  result: string;
  answer: Record<string, unknown>;
  /** The 400 of an invalid element, as the service answers it. */
  invalid: { summary: string; value: unknown };
}

/** The delivery code field's own schema: the same rules its check applies to each element. */
const codeSchema = () => deliveries.fields.code!.valueSchema(requestContext(deliveries));

const notACode = {
  summary: 'An element that is not a delivery code',
  value: problems
    .invalidItems([{ index: 1, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] }])
    .body(),
};

function endpoints(): Endpoint[] {
  const invalidRejection = checkRejectValue([{ code: 'DEL-0001', reason: '' }]);
  return [
    {
      path: '/v1/deliveries/acknowledge',
      operationId: 'acknowledgeDeliveries',
      summary: 'Acknowledge downloaded deliveries',
      description:
        'Marks deliveries as received by the ERP: they never appear in the pending list again, and a ' +
        'rejected one is no longer rejected. Idempotent; codes the tenant does not have are listed in notFound.',
      bodyLimit: ACKNOWLEDGE_BODY_LIMIT,
      maxItems: MAX_BATCH_ITEMS,
      items: codeSchema(),
      example: ['DEL-0001', 'DEL-0002'],
      result: 'AcknowledgeResult',
      answer: {
        statusCode: 200,
        message: 'Deliveries acknowledged',
        acknowledged: 1,
        notFound: ['DEL-0002'],
      },
      invalid: notACode,
    },
    {
      path: '/v1/deliveries/reject',
      operationId: 'rejectDeliveries',
      summary: 'Reject deliveries the ERP cannot take, with a reason',
      description:
        'The deliveries leave the pending list and appear in GET /v1/deliveries/rejected with rejected_at and ' +
        'rejection_reason, until they are requeued or acknowledged. Rejecting again replaces the reason (and ' +
        'the date); a code given twice takes its last reason. Codes that name no pending or rejected delivery ' +
        'of the tenant (acknowledged ones included) are listed in notFound.',
      bodyLimit: REJECT_BODY_LIMIT,
      maxItems: MAX_REJECTIONS,
      items: schemaRef('Rejection'),
      example: [{ code: 'DEL-0001', reason: 'Customer C-77 does not exist in the ERP' }],
      result: 'RejectResult',
      answer: { statusCode: 200, message: 'Deliveries rejected', rejected: 1, notFound: [] },
      invalid: {
        summary: 'An element without a reason',
        value: problems
          .invalidItems(invalidRejection.kind === 'invalid' ? invalidRejection.errors : [])
          .body(),
      },
    },
    {
      path: '/v1/deliveries/requeue',
      operationId: 'requeueDeliveries',
      summary: 'Put rejected deliveries back in the pending list',
      description:
        'Once the ERP can take them: rejected_at and rejection_reason become null and the deliveries are ' +
        'pending again. Codes that name no rejected delivery of the tenant are listed in notFound.',
      bodyLimit: ACKNOWLEDGE_BODY_LIMIT,
      maxItems: MAX_BATCH_ITEMS,
      items: codeSchema(),
      example: ['DEL-0001'],
      result: 'RequeueResult',
      answer: { statusCode: 200, message: 'Deliveries requeued', requeued: 1, notFound: [] },
      invalid: notACode,
    },
  ];
}

function operation(endpoint: Endpoint): OpenApiObject {
  return {
    post: {
      tags: ['Read'],
      operationId: endpoint.operationId,
      summary: endpoint.summary,
      description:
        `${endpoint.description} Body: a JSON array of 1 to ${endpoint.maxItems} elements, at most ` +
        `${endpoint.bodyLimit} bytes (x-body-limit), with the array rules of the batch endpoints.`,
      security: apiSecurity,
      'x-body-limit': endpoint.bodyLimit,
      parameters: [idempotencyKeyHeader],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { type: 'array', minItems: 1, maxItems: endpoint.maxItems, items: endpoint.items },
            example: endpoint.example,
          },
        },
      },
      responses: {
        '200': {
          description: 'Done.',
          headers: replayedHeader,
          content: { 'application/json': { schema: schemaRef(endpoint.result), example: endpoint.answer } },
        },
        '400': {
          description: 'Invalid JSON, an array rule broken, or invalid elements.',
          content: {
            'application/json': {
              schema: { oneOf: [schemaRef('BatchErrors'), schemaRef('ParameterErrors')] },
              examples: {
                invalidElement: endpoint.invalid,
                ...arrayRuleExamples(endpoint.maxItems),
                ...invalidKeyExample,
              },
            },
          },
        },
        ...idempotencyResponses,
        '401': responseRef('Unauthorized'),
        '429': responseRef('TooManyRequests'),
        '413': bodyTooLargeResponse(endpoint.bodyLimit),
        '415': responseRef('UnsupportedMediaType'),
        '500': responseRef('ServerError'),
      },
    },
  };
}

/** POST /v1/deliveries/acknowledge, /reject and /requeue (extensions.md 4 and 13). */
export function deliveryStatePaths(): Record<string, OpenApiObject> {
  return Object.fromEntries(endpoints().map((endpoint) => [endpoint.path, operation(endpoint)]));
}
