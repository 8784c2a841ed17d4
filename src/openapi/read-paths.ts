import { MAX_BATCH_ITEMS } from '../batch/resource.js';
import type { ItemsField, TextField } from '../fields/field.js';
import { problems } from '../http/problems.js';
import { ACKNOWLEDGE_BODY_LIMIT, NOT_A_DELIVERY_CODE } from '../read/acknowledge.js';
import { customerListParams } from '../read/customers-list.js';
import { pendingDeliveryParams } from '../read/deliveries-pending.js';
import { pageEnvelope } from '../read/page-envelope.js';
import type { ParamRule } from '../read/query-params.js';
import { customers } from '../resources/customers.js';
import { deliveries } from '../resources/deliveries.js';
import { arrayRuleExamples } from './batch-paths.js';
import { bodyTooLargeResponse } from './errors.js';
import { exampleObject, objectSchema, type SchemaContext } from './field-schemas.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { parameterErrorExample, queryParameters } from './query-parameters.js';
import { apiSecurity } from './security.js';

const responseContext: SchemaContext = {
  direction: 'response',
  childSchema: () => schemaRef('DeliveryItem'),
};
const itemFields = (deliveries.fields.items as ItemsField).fields;

/** The objects the read endpoints list, from the field tables that load them (src/read/select-list.ts). */
export function readSchemas(): Record<string, JsonSchema> {
  return {
    Customer: objectSchema(customers.fields, responseContext, {
      description: 'A customer, as loaded by POST /api/customers/batch-create.',
      alwaysSet: Object.keys(customers.insertDefaults ?? {}),
    }),
    Delivery: objectSchema(deliveries.fields, responseContext, {
      description: 'A delivery with its items, in item_number order.',
      alwaysSet: Object.keys(deliveries.insertDefaults ?? {}),
    }),
    DeliveryItem: objectSchema(itemFields, responseContext, {
      description: 'One line of a delivery.',
    }),
    PageMeta: {
      type: 'object',
      description: 'Where this page lies in the list. totalPages is 0 when nothing matches.',
      required: ['totalItems', 'itemCount', 'itemsPerPage', 'totalPages', 'currentPage'],
      properties: {
        totalItems: { type: 'integer', minimum: 0, description: 'records matching the filters' },
        itemCount: { type: 'integer', minimum: 0, description: 'records on this page' },
        itemsPerPage: { type: 'integer', minimum: 1, description: 'the requested limit' },
        totalPages: { type: 'integer', minimum: 0 },
        currentPage: { type: 'integer', minimum: 1 },
      },
    },
    PageLinks: {
      type: 'object',
      description:
        'Absolute URLs keeping every filter and the sort of the request, with page and limit last. prev is ' +
        'null on the first page, next on the last (and past it).',
      required: ['self', 'first', 'last', 'prev', 'next'],
      properties: {
        self: { type: 'string', format: 'uri' },
        first: { type: 'string', format: 'uri' },
        last: { type: 'string', format: 'uri', description: 'page 1 when nothing matches' },
        prev: { type: ['string', 'null'], format: 'uri' },
        next: { type: ['string', 'null'], format: 'uri' },
      },
    },
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

const pageSchema = (item: string): JsonSchema => ({
  type: 'object',
  required: ['data', 'meta', 'links'],
  properties: {
    data: { type: 'array', items: schemaRef(item) },
    meta: schemaRef('PageMeta'),
    links: schemaRef('PageLinks'),
  },
});

const PARAMETER_RULES =
  'Every parameter is optional. An unknown, repeated or empty parameter, or a value out of its rule, is a ' +
  '400 naming the parameter; nothing is clamped.';

function listOperation(options: {
  operationId: string;
  summary: string;
  description: string;
  path: string;
  rules: Readonly<Record<string, ParamRule>>;
  meanings: Readonly<Record<string, string>>;
  item: string;
  example: object;
}): OpenApiObject {
  const sort = options.rules.sort;
  const filters = sort?.kind === 'choice' ? { sort: sort.default } : {};
  const envelope = pageEnvelope(`https://backoffice.example.com${options.path}`, filters, 2, 100, 250, 100);
  return {
    get: {
      tags: ['Read'],
      operationId: options.operationId,
      summary: options.summary,
      description: `${options.description}\n\n${PARAMETER_RULES}`,
      security: apiSecurity,
      parameters: queryParameters(options.rules, options.meanings),
      responses: {
        '200': {
          description: 'One page.',
          content: {
            'application/json': {
              schema: pageSchema(options.item),
              example: { data: [options.example], ...envelope },
            },
          },
        },
        '400': {
          description: 'Invalid query parameters, every problem at once.',
          content: {
            'application/json': {
              schema: schemaRef('ParameterErrors'),
              example: parameterErrorExample(options.rules),
            },
          },
        },
        '401': responseRef('Unauthorized'),
        '429': responseRef('TooManyRequests'),
        '500': responseRef('ServerError'),
      },
    },
  };
}

/** backoffice-api.md 4.1, 4.2; extensions.md 4 and 6. */
export function readPaths(): Record<string, OpenApiObject> {
  return {
    '/v1/customers': listOperation({
      operationId: 'listCustomers',
      summary: 'List customers',
      description:
        "The tenant's customers, filtered and paged, sorted by creation date, the code breaking ties in the " +
        'same direction.',
      path: '/v1/customers',
      rules: customerListParams,
      meanings: {
        client_id: 'exact customer code',
        created_from: 'customers created on or after this date',
        modified_from: 'customers modified on or after this date',
        sort: 'created_at ascending or -created_at descending',
        page: 'page number, from 1',
        limit: 'page size',
      },
      item: 'Customer',
      example: exampleObject(customers.fields, { requiredOnly: false }),
    }),
    '/v1/deliveries/pending': listOperation({
      operationId: 'listPendingDeliveries',
      summary: 'List deliveries not yet acknowledged',
      description:
        'Deliveries with their items that have not been acknowledged (POST /v1/deliveries/acknowledge), sorted ' +
        'by reported date, the code breaking ties; a delivery without a reported date sorts as the oldest.',
      path: '/v1/deliveries/pending',
      rules: pendingDeliveryParams,
      meanings: {
        client_id: 'exact customer code',
        seller_id: 'exact seller (carrier) code',
        reported_from: 'deliveries reported on or after this date',
        sort: 'reported_at ascending or -reported_at descending',
        page: 'page number, from 1',
        limit: 'page size',
      },
      item: 'Delivery',
      example: exampleObject(deliveries.fields, { requiredOnly: false }),
    }),
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
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'array',
                minItems: 1,
                maxItems: MAX_BATCH_ITEMS,
                items: {
                  type: 'string',
                  minLength: 1,
                  maxLength: (deliveries.fields.code as TextField).max,
                  pattern: '\\S',
                },
              },
              example: ['DEL-0001', 'DEL-0002'],
            },
          },
        },
        responses: {
          '200': {
            description: 'Acknowledged.',
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
                schema: schemaRef('BatchErrors'),
                examples: {
                  notACode: {
                    summary: 'An element that is not a delivery code',
                    value: problems
                      .invalidItems([{ index: 1, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] }])
                      .body(),
                  },
                  ...arrayRuleExamples(),
                },
              },
            },
          },
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
