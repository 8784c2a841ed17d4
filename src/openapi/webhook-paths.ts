import { encodeCursor } from '../feed/cursor.js';
import { feedResources } from '../resources/feed.js';
import {
  BATCH_SIZE,
  inputMessages,
  MAX_DESCRIPTION_LENGTH,
  MAX_ENDPOINTS_PER_TENANT,
  MAX_URL_LENGTH,
  RESOURCE_NAMES,
} from '../webhooks/endpoint-input.js';
import { NOT_FOUND_MESSAGE, TOO_MANY_MESSAGE } from '../webhooks/endpoints.js';
import { exampleObject } from './field-schemas.js';
import { idempotencyKeyHeader, idempotencyResponses, replayedHeader } from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';
import {
  commonResponses,
  DATE_TIME,
  fieldErrorsResponse,
  idParameter,
  json,
  managementOperation,
  problemResponse,
} from './management-operations.js';

/*
 * Webhooks (extensions.md 11): the endpoints that manage them, and in the document's `webhooks`
 * section the deliveries the service sends, each from the declarations and checks the service uses.
 */

const WEBHOOKS = '/v1/webhooks';
const ONE = `${WEBHOOKS}/{id}`;
const resourceName = { type: 'string', enum: [...RESOURCE_NAMES] };
const cursor = { type: 'string', description: 'a change-feed cursor (GET /v1/changes `after`)' };
const exampleCursor = encodeCursor('customers', { xid: '1052', key: ['C-1'] }, '1764000000000000');
const exampleId = 'wh_5f0c2a9e8b7d6c5b4a392817';
const exampleSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1eRqs4HhS5w=';

const urlSchema = {
  type: 'string',
  format: 'uri',
  maxLength: MAX_URL_LENGTH,
  description:
    'absolute https:// URL without user info or fragment (http:// only to hosts inside WEBHOOK_ALLOWED_NETWORKS); its host must resolve to public addresses only',
};
const resourcesSchema = {
  type: 'array',
  minItems: 1,
  uniqueItems: true,
  items: resourceName,
  description: 'the change feed resources whose changes are sent',
};
const batchSizeSchema = {
  type: 'integer',
  minimum: BATCH_SIZE.min,
  maximum: BATCH_SIZE.max,
  description: 'records per delivery',
};
const descriptionSchema = { type: ['string', 'null'], maxLength: MAX_DESCRIPTION_LENGTH };

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
          description: 'why it was not delivered ("timeout", "status 500", "address not allowed", ...)',
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
const fieldErrors = fieldErrorsResponse;
const common = commonResponses;
const operation = managementOperation('Webhooks');

const createBody = {
  type: 'object',
  required: ['url', 'resources'],
  properties: {
    url: urlSchema,
    resources: resourcesSchema,
    from: {
      enum: ['now', 'start'],
      default: 'now',
      description: 'now: changes committed after the endpoint was made; start: the whole feed first',
    },
    batch_size: { ...batchSizeSchema, default: BATCH_SIZE.default },
    description: descriptionSchema,
  },
  additionalProperties: false,
};

const changeBody = {
  type: 'object',
  minProperties: 1,
  properties: {
    url: urlSchema,
    resources: { ...resourcesSchema, description: 'a resource added starts at the feed as it is now' },
    batch_size: batchSizeSchema,
    description: descriptionSchema,
    status: {
      enum: ['active', 'paused'],
      description: 'active again: resumes with the first change not taken',
    },
  },
  additionalProperties: false,
};

export function webhookPaths(): Record<string, OpenApiObject> {
  return {
    [WEBHOOKS]: {
      post: operation(
        'createWebhook',
        'Register a webhook endpoint',
        `The service then POSTs the changes of the chosen resources to the URL, in the change feed's order, signed by the Standard Webhooks scheme with the secret answered here (shown this once). At most ${MAX_ENDPOINTS_PER_TENANT} endpoints per tenant.`,
        {
          parameters: [idempotencyKeyHeader],
          requestBody: {
            required: true,
            content: json(createBody, { url: exampleEndpoint.url, resources: ['customers'], from: 'now' }),
          },
          responses: {
            '201': {
              description: 'The endpoint, with its secret.',
              headers: replayedHeader,
              content: json(schemaRef('WebhookEndpointCreated'), {
                ...exampleEndpoint,
                secret: exampleSecret,
              }),
            },
            '400': fieldErrors(
              'A field refused, or a URL whose host is not public.',
              'url',
              inputMessages.url,
            ),
            '409': {
              description: `The tenant has ${MAX_ENDPOINTS_PER_TENANT} endpoints already.`,
              content: json(schemaRef('Problem'), {
                statusCode: 409,
                errors: [{ message: TOO_MANY_MESSAGE }],
              }),
            },
            ...idempotencyResponses,
            ...common,
          },
        },
      ),
      get: operation(
        'listWebhooks',
        'List webhook endpoints',
        'Every endpoint of the tenant, without secrets.',
        {
          responses: {
            '200': {
              description: 'The endpoints, oldest first.',
              content: json(
                {
                  type: 'object',
                  required: ['data'],
                  properties: { data: { type: 'array', items: schemaRef('WebhookEndpoint') } },
                },
                { data: [exampleEndpoint] },
              ),
            },
            ...common,
          },
        },
      ),
    },
    [ONE]: {
      get: operation('getWebhook', 'One webhook endpoint', 'The endpoint, without its secret.', {
        parameters: [idParameter],
        responses: {
          '200': {
            description: 'The endpoint.',
            content: json(schemaRef('WebhookEndpoint'), exampleEndpoint),
          },
          '404': notFound,
          ...common,
        },
      }),
      patch: operation(
        'changeWebhook',
        'Change a webhook endpoint',
        'Any of url, resources, description, batch_size and status (active or paused). Nothing is lost while paused or disabled.',
        {
          parameters: [idParameter],
          requestBody: { required: true, content: json(changeBody, { status: 'active' }) },
          responses: {
            '200': {
              description: 'The endpoint changed.',
              content: json(schemaRef('WebhookEndpoint'), exampleEndpoint),
            },
            '400': fieldErrors('A field refused.', 'status', inputMessages.status),
            '404': notFound,
            ...common,
          },
        },
      ),
      delete: operation('deleteWebhook', 'Remove a webhook endpoint', 'Nothing more is sent to it.', {
        parameters: [idParameter],
        responses: { '204': { description: 'Removed.' }, '404': notFound, ...common },
      }),
    },
    [`${ONE}/rotate-secret`]: {
      post: operation(
        'rotateWebhookSecret',
        'Rotate the signing secret',
        'For the next 24 hours every delivery is signed with both the new and the old secret (two values in webhook-signature).',
        {
          parameters: [idParameter, idempotencyKeyHeader],
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
      ),
    },
    [`${ONE}/replay`]: {
      post: operation(
        'replayWebhook',
        'Deliver a resource again from a cursor',
        'Delivery of the resource goes on after the cursor (absent: from the start of the feed); a delivery under way is dropped.',
        {
          parameters: [idParameter, idempotencyKeyHeader],
          requestBody: {
            required: true,
            content: json(
              {
                type: 'object',
                required: ['resource'],
                properties: { resource: resourceName, after: cursor },
                additionalProperties: false,
              },
              { resource: 'customers', after: exampleCursor },
            ),
          },
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
            '400': fieldErrors(
              'Not a resource of the endpoint, or not a cursor of it.',
              'after',
              inputMessages.after,
            ),
            '404': notFound,
            ...idempotencyResponses,
            ...common,
          },
        },
      ),
    },
    [`${ONE}/ping`]: {
      post: operation(
        'pingWebhook',
        'Send a signed ping now',
        "One delivery of type ping, by the rules of every delivery, whatever the endpoint's status; its answer is not kept.",
        {
          parameters: [idParameter],
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
      ),
    },
    [`${ONE}/deliveries`]: {
      get: operation(
        'listWebhookDeliveries',
        'The latest delivery attempts',
        "Newest first; an endpoint's response body is never kept.",
        {
          parameters: [
            idParameter,
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            },
          ],
          responses: {
            '200': {
              description: 'Attempts, newest first.',
              content: json(
                {
                  type: 'object',
                  required: ['data'],
                  properties: { data: { type: 'array', items: schemaRef('WebhookDeliveryAttempt') } },
                },
                {
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
                },
              ),
            },
            '400': {
              description: 'A limit out of range.',
              content: json(schemaRef('ParameterErrors')),
            },
            '404': notFound,
            ...common,
          },
        },
      ),
    },
  };
}

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
