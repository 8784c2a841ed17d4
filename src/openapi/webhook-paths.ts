import { encodeCursor } from '../feed/cursor.js';
import { feedResources } from '../resources/feed.js';
import { webhookRoutes } from '../routes/v1/webhook-schemas.js';
import { inputMessages, MAX_ENDPOINTS_PER_TENANT, RESOURCE_NAMES } from '../webhooks/endpoint-input.js';
import { NOT_FOUND_MESSAGE, TOO_MANY_MESSAGE } from '../webhooks/endpoints.js';
import { exampleObject } from './field-schemas.js';
import { idempotencyKeyHeader, idempotencyResponses, replayedHeader } from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';
import {
  commonResponses,
  DATE_TIME,
  fieldErrorsResponse,
  json,
  problemResponse,
} from './management-operations.js';
import { declaredPaths, type OperationAnswers } from './route-operations.js';

/** A list answer: `{ data: [...] }` of a component schema. */
const dataOf = (name: string): JsonSchema => ({
  type: 'object',
  required: ['data'],
  properties: { data: { type: 'array', items: schemaRef(name) } },
});

/*
 * Webhooks (extensions.md 11): the endpoints that manage them, and in the document's `webhooks`
 * section the deliveries the service sends, each from the declarations and checks the service uses.
 */

const resourceName = { type: 'string', enum: [...RESOURCE_NAMES] };
const cursor = { type: 'string', description: 'a change-feed cursor (GET /v1/changes `after`)' };
const exampleCursor = encodeCursor('customers', { xid: '1052', key: ['C-1'] }, '1764000000000000');
const exampleId = 'wh_5f0c2a9e8b7d6c5b4a392817';
const exampleSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1eRqs4HhS5w=';

const endpointProperties: Record<string, JsonSchema> = {
  id: { type: 'string', pattern: '^wh_[0-9a-f]{24}$' },
  url: { type: 'string' },
  resources: { type: 'array', items: resourceName },
  description: { type: ['string', 'null'] },
  batch_size: { type: 'integer' },
  status: { enum: ['active', 'paused', 'disabled'] },
  failing_since: {
    anyOf: [DATE_TIME, { type: 'null' }],
    description: 'the first failed attempt of the failures going on now (UTC)',
  },
  disabled_reason: { type: ['string', 'null'] },
  positions: {
    type: 'object',
    additionalProperties: cursor,
    description:
      'per resource, the cursor after the last record delivered (at creation: where delivery starts)',
  },
  created_at: DATE_TIME,
};

const exampleEndpoint = {
  id: exampleId,
  url: 'https://erp.example.com/hooks/sfa',
  resources: ['customers'],
  description: 'ERP customer sync',
  batch_size: 100,
  status: 'active',
  failing_since: null,
  disabled_reason: null,
  positions: { customers: exampleCursor },
  created_at: '2026-11-25T08:00:00',
};

export function webhookSchemas(): Record<string, JsonSchema> {
  const required = Object.keys(endpointProperties);
  return {
    WebhookEndpoint: {
      type: 'object',
      description: 'A webhook endpoint of the tenant, without its secret.',
      required,
      properties: endpointProperties,
      additionalProperties: false,
    },
    WebhookEndpointCreated: {
      type: 'object',
      description: 'The endpoint just made, with its secret: shown here and on rotation only.',
      required: [...required, 'secret'],
      properties: {
        ...endpointProperties,
        secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$' },
      },
      additionalProperties: false,
    },
    WebhookDeliveryAttempt: {
      type: 'object',
      required: ['id', 'resource', 'records', 'attempt', 'statusCode', 'error', 'durationMs', 'attemptedAt'],
      properties: {
        id: {
          type: 'string',
          description: 'the webhook-id of the delivery, the same on each of its attempts',
        },
        resource: resourceName,
        records: { type: 'integer', minimum: 1 },
        attempt: { type: 'integer', minimum: 1, description: '1 for the first attempt of the delivery' },
        statusCode: { type: ['integer', 'null'], description: "the endpoint's status; null when none came" },
        error: {
          type: ['string', 'null'],
          description:
            'why it was not delivered ("timeout", "status 500", "address not allowed", "instance stopped during the attempt", ...)',
        },
        durationMs: { type: 'integer', minimum: 0 },
        attemptedAt: DATE_TIME,
      },
      additionalProperties: false,
    },
    WebhookChanges: {
      type: 'object',
      description:
        'A delivery: records of one resource exactly as GET /v1/changes gives them, in feed order.',
      required: ['type', 'resource', 'data', 'next'],
      properties: {
        type: { const: 'changes' },
        resource: resourceName,
        data: {
          type: 'array',
          minItems: 1,
          items: { anyOf: feedResources.map((feed) => schemaRef(feed.schemaName)) },
        },
        next: { ...cursor, description: 'the cursor after the last record: poll from here at any time' },
      },
    },
    WebhookPing: {
      type: 'object',
      required: ['type', 'webhook'],
      properties: { type: { const: 'ping' }, webhook: { type: 'string' } },
    },
  };
}

const notFound = problemResponse('No endpoint of this tenant has the id.', 404, NOT_FOUND_MESSAGE);
const common = commonResponses;

/** What each webhook operation answers; what it takes is declared on its route. */
const answers: Record<string, OperationAnswers> = {
  createWebhook: {
    parameters: [idempotencyKeyHeader],
    requestExample: { url: exampleEndpoint.url, resources: ['customers'], from: 'now' },
    responses: {
      '201': {
        description: 'The endpoint, with its secret.',
        headers: replayedHeader,
        content: json(schemaRef('WebhookEndpointCreated'), { ...exampleEndpoint, secret: exampleSecret }),
      },
      '400': fieldErrorsResponse(
        'A field refused, or a URL whose host is not public.',
        'url',
        inputMessages.url,
      ),
      '409': {
        description: `The tenant has ${MAX_ENDPOINTS_PER_TENANT} endpoints already.`,
        content: json(schemaRef('Problem'), { statusCode: 409, errors: [{ message: TOO_MANY_MESSAGE }] }),
      },
      ...idempotencyResponses,
      ...common,
    },
  },
  listWebhooks: {
    responses: {
      '200': {
        description: 'The endpoints, oldest first.',
        content: json(dataOf('WebhookEndpoint'), { data: [exampleEndpoint] }),
      },
      ...common,
    },
  },
  getWebhook: {
    responses: {
      '200': { description: 'The endpoint.', content: json(schemaRef('WebhookEndpoint'), exampleEndpoint) },
      '404': notFound,
      ...common,
    },
  },
  changeWebhook: {
    requestExample: { status: 'active' },
    responses: {
      '200': {
        description: 'The endpoint changed.',
        content: json(schemaRef('WebhookEndpoint'), exampleEndpoint),
      },
      '400': fieldErrorsResponse('A field refused.', 'status', inputMessages.status),
      '404': notFound,
      ...common,
    },
  },
  deleteWebhook: { responses: { '204': { description: 'Removed.' }, '404': notFound, ...common } },
  rotateWebhookSecret: {
    parameters: [idempotencyKeyHeader],
    responses: {
      '200': {
        description: 'The new secret, shown this once.',
        content: json(
          { type: 'object', required: ['secret'], properties: { secret: { type: 'string' } } },
          { secret: exampleSecret },
        ),
      },
      '404': notFound,
      ...idempotencyResponses,
      ...common,
    },
  },
  replayWebhook: {
    parameters: [idempotencyKeyHeader],
    requestExample: { resource: 'customers', after: exampleCursor },
    responses: {
      '202': {
        description: 'Delivery goes on from there.',
        content: json(
          {
            type: 'object',
            required: ['statusCode', 'message'],
            properties: { statusCode: { const: 202 }, message: { type: 'string' } },
          },
          { statusCode: 202, message: 'Replay scheduled' },
        ),
      },
      '400': fieldErrorsResponse(
        'Not a resource of the endpoint, or not a cursor of it.',
        'after',
        inputMessages.after,
      ),
      '404': notFound,
      ...idempotencyResponses,
      ...common,
    },
  },
  retryWebhook: {
    parameters: [idempotencyKeyHeader],
    responses: {
      '202': {
        description: 'The waiting deliveries are due now (202 with nothing waiting too).',
        content: json(
          {
            type: 'object',
            required: ['statusCode', 'message'],
            properties: { statusCode: { const: 202 }, message: { type: 'string' } },
          },
          { statusCode: 202, message: 'Retry scheduled' },
        ),
      },
      '404': notFound,
      ...common,
    },
  },
  pingWebhook: {
    responses: {
      '200': {
        description: 'What the endpoint answered.',
        content: json(
          {
            type: 'object',
            required: ['statusCode', 'error', 'durationMs'],
            properties: {
              statusCode: { type: ['integer', 'null'] },
              error: { type: ['string', 'null'] },
              durationMs: { type: 'integer', minimum: 0 },
            },
          },
          { statusCode: 204, error: null, durationMs: 41 },
        ),
      },
      '404': notFound,
      ...common,
    },
  },
  listWebhookDeliveries: {
    responses: {
      '200': {
        description: 'Attempts, newest first.',
        content: json(dataOf('WebhookDeliveryAttempt'), {
          data: [
            {
              id: 'msg_2Ahc1c8bKq3ZbQ0aF9xW1g',
              resource: 'customers',
              records: 100,
              attempt: 1,
              statusCode: 204,
              error: null,
              durationMs: 41,
              attemptedAt: '2026-11-25T08:00:02',
            },
          ],
        }),
      },
      '400': { description: 'A limit out of range.', content: json(schemaRef('ParameterErrors')) },
      '404': notFound,
      ...common,
    },
  },
};

/** The webhook management operations: their routes' declarations and their answers. */
export const webhookPaths = (): Record<string, OpenApiObject> =>
  declaredPaths(Object.values(webhookRoutes), answers);

const signatureHeaders = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'the delivery (msg_...), the same on every attempt of it: deduplicate by it',
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'Unix seconds of the attempt',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description:
      'v1, and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the base64-decoded secret after whsec_; two such values, space-separated, for 24 hours after a rotation',
  },
];

/** The document's `webhooks` section: what the service POSTs to an endpoint. */
export function webhookDeliveries(): Record<string, OpenApiObject> {
  const [first] = feedResources;
  const answer = {
    responses: {
      '2XX': { description: 'Taken: the next delivery follows.' },
      '410': { description: 'Gone: the endpoint is disabled at once.' },
      default: {
        description:
          'Anything else (or no answer within 15 s, or a redirect, never followed) is attempted again with exponential backoff, from within 10 s up to an hour apart; Retry-After on 429 or 503 is honoured. After 3 days of failures the endpoint is disabled.',
      },
    },
  };
  return {
    changes: {
      post: {
        summary: 'Changes of one resource, in commit order',
        description:
          "Per endpoint and resource one delivery at a time: the next is sent after a 2xx, so records arrive in the feed's order.",
        parameters: signatureHeaders,
        requestBody: {
          required: true,
          content: json(schemaRef('WebhookChanges'), {
            type: 'changes',
            resource: first!.name,
            data: [exampleObject({ ...first!.source.fields, ...first!.extra }, { requiredOnly: false })],
            next: encodeCursor(first!.name, { xid: '1052', key: ['P-1'] }, '1764000000000000'),
          }),
        },
        ...answer,
      },
    },
    ping: {
      post: {
        summary: 'A ping (POST /v1/webhooks/{id}/ping)',
        parameters: signatureHeaders,
        requestBody: {
          required: true,
          content: json(schemaRef('WebhookPing'), { type: 'ping', webhook: exampleId }),
        },
        ...answer,
      },
    },
  };
}
