import { ACKNOWLEDGE_BODY_LIMIT, NOT_A_DELIVERY_CODE } from '../deliveries/acknowledge.js';
import { problems } from '../http/problems.js';
import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { deliveries } from '../resources/deliveries.js';
import { arrayRuleExamples, requestContext } from './batch-paths.js';
import { bodyTooLargeResponse } from './errors.js';
import {
  idempotencyKeyHeader,
  idempotencyResponses,
  invalidKeyExample,
  replayedHeader,
} from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { apiSecurity } from './security.js';

/** The answer of POST /v1/deliveries/acknowledge (extensions.md 4). */
export function acknowledgeSchemas(): Record<string, JsonSchema> {
  return {
    AcknowledgeResult: {
      type: 'object',
      required: ['statusCode', 'message', 'acknowledged', 'notFound'],
      properties: {
        statusCode: { const: 200 },
        message: { const: 'Deliveries acknowledged' },
        acknowledged: {
          type: 'integer',
          minimum: 0,
          description: 'distinct given codes the tenant has (newly or already acknowledged)',
        },
        notFound: { type: 'array', items: { type: 'string' }, description: 'the other codes, sorted' },
      },
    },
  };
}

/** POST /v1/deliveries/acknowledge (extensions.md 4). */
export function acknowledgePath(): Record<string, OpenApiObject> {
  return {
    '/v1/deliveries/acknowledge': {
      post: {
        tags: ['Read'],
        operationId: 'acknowledgeDeliveries',
        summary: 'Acknowledge downloaded deliveries',
        description:
          'Marks deliveries as received by the ERP: they never appear in the pending list again. Idempotent; ' +
          `codes the tenant does not have are listed in notFound. Body: a JSON array of 1 to ${MAX_BATCH_ITEMS} ` +
          `delivery codes, at most ${ACKNOWLEDGE_BODY_LIMIT} bytes (x-body-limit), with the array rules of the ` +
          'batch endpoints.',
        security: apiSecurity,
        'x-body-limit': ACKNOWLEDGE_BODY_LIMIT,
        parameters: [idempotencyKeyHeader],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'array',
                minItems: 1,
                maxItems: MAX_BATCH_ITEMS,
                // The code field's own schema: the same rules its check applies to each element.
                items: deliveries.fields.code!.valueSchema(requestContext(deliveries)),
              },
              example: ['DEL-0001', 'DEL-0002'],
            },
          },
        },
        responses: {
          '200': {
            description: 'Acknowledged.',
            headers: replayedHeader,
            content: {
              'application/json': {
                schema: schemaRef('AcknowledgeResult'),
                example: {
                  statusCode: 200,
                  message: 'Deliveries acknowledged',
                  acknowledged: 1,
                  notFound: ['DEL-0002'],
                },
              },
            },
          },
          '400': {
            description: 'Invalid JSON, an array rule broken, or elements that are not delivery codes.',
            content: {
              'application/json': {
                schema: { oneOf: [schemaRef('BatchErrors'), schemaRef('ParameterErrors')] },
                examples: {
                  notACode: {
                    summary: 'An element that is not a delivery code',
                    value: problems
                      .invalidItems([{ index: 1, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] }])
                      .body(),
                  },
                  ...arrayRuleExamples(),
                  ...invalidKeyExample,
                },
              },
            },
          },
          ...idempotencyResponses,
          '401': responseRef('Unauthorized'),
          '429': responseRef('TooManyRequests'),
          '413': bodyTooLargeResponse(ACKNOWLEDGE_BODY_LIMIT),
          '415': responseRef('UnsupportedMediaType'),
          '500': responseRef('ServerError'),
        },
      },
    },
  };
}
