import { ValidationCrash } from '../batch/batch-errors.js';
import type { HttpProblem } from '../http/problems.js';
import { DATABASE_RETRY_AFTER_SECONDS, problems } from '../http/problems.js';
import { serverErrorMessage } from '../http/server-errors.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';

/** An OpenAPI examples map from named error answers made by the service's own catalogue. */
export function problemExamples(named: Record<string, { summary: string; problem: HttpProblem }>) {
  return Object.fromEntries(
    Object.entries(named).map(([name, { summary, problem }]) => [name, { summary, value: problem.body() }]),
  );
}

const message = { type: 'string' };

/** The error bodies of backoffice-api.md 7.1 and extensions.md 2 and 6 (src/http/problems.ts). */
export const errorSchemas: Record<string, JsonSchema> = {
  MessageError: {
    type: 'object',
    description: 'An error about the request as a whole.',
    required: ['message'],
    properties: { message },
    additionalProperties: false,
  },
  ArrayError: {
    type: 'object',
    description:
      'The body broke an array rule (not an array, empty, or too long), or, as the last element of a ' +
      'list of item errors, says that the list was cut after 50,000 problems.',
    required: ['index', 'field', 'message'],
    properties: { index: { type: 'null' }, field: { type: 'null' }, message },
    additionalProperties: false,
  },
  FieldError: {
    type: 'object',
    description:
      'One problem of an item: field is the field name (items[i].name inside delivery items), ' +
      'or null when the item itself is wrong, or, last, when its list was cut after 100 problems.',
    required: ['field', 'message'],
    properties: { field: { type: ['string', 'null'] }, message },
    additionalProperties: false,
  },
  ItemError: {
    type: 'object',
    description: 'An invalid item and every problem it has.',
    required: ['index', 'errors'],
    properties: {
      index: { type: 'integer', minimum: 0, description: 'zero-based position of the item in the array' },
      errors: { type: 'array', minItems: 1, items: schemaRef('FieldError') },
    },
    additionalProperties: false,
  },
  FieldErrors: {
    type: 'object',
    description:
      'A refused body of a management API (webhooks, bulk jobs): every problem, each naming its field (null: the body as a whole).',
    required: ['statusCode', 'errors'],
    properties: {
      statusCode: { const: 400 },
      errors: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['field', 'message'],
          properties: { field: { type: ['string', 'null'] }, message },
        },
      },
    },
  },
  BatchErrors: {
    type: 'object',
    description:
      'A refused array body: one ArrayError, one MessageError (invalid JSON), or one ItemError per invalid ' +
      'item, sorted by index. Nothing of the batch is written.',
    required: ['statusCode', 'errors'],
    properties: {
      statusCode: { const: 400 },
      errors: {
        type: 'array',
        minItems: 1,
        items: { oneOf: [schemaRef('ArrayError'), schemaRef('ItemError'), schemaRef('MessageError')] },
      },
    },
  },
  Problem: {
    type: 'object',
    description: 'An error answer: its HTTP status and what went wrong.',
    required: ['statusCode', 'errors'],
    properties: {
      statusCode: { type: 'integer', minimum: 400, maximum: 599 },
      errors: { type: 'array', minItems: 1, items: schemaRef('MessageError') },
    },
  },
  ParameterError: {
    type: 'object',
    required: ['field', 'message'],
    properties: { field: { type: 'string', description: 'the query parameter' }, message },
    additionalProperties: false,
  },
  ParameterErrors: {
    type: 'object',
    description: 'Refused query parameters, every problem at once; nothing is clamped.',
    required: ['statusCode', 'errors'],
    properties: {
      statusCode: { const: 400 },
      errors: { type: 'array', minItems: 1, items: schemaRef('ParameterError') },
    },
  },
};

const problemContent = (examples: OpenApiObject) => ({
  'application/json': { schema: schemaRef('Problem'), examples },
});

/** A 500 example with a request id as the service makes them. */
const serverError = (error: unknown) => problems.server(serverErrorMessage(error, 'req-1a'));
const withCode = (code: string) => Object.assign(new Error(code), { code });

/** Answers shared by many operations. */
export const errorResponses: Record<string, OpenApiObject> = {
  Unauthorized: {
    description:
      'Missing or wrong credentials: every /api and /v1 request needs a Subscription-Key header and ' +
      'Authorization: Bearer <access_token> from POST /token, both of the same tenant. No body is read before ' +
      'this check.',
    headers: {
      'WWW-Authenticate': {
        description: 'Bearer challenge (RFC 6750), with error="invalid_token" when a token was refused',
        schema: { type: 'string' },
      },
    },
    content: problemContent(
      problemExamples({
        missingKey: { summary: 'No Subscription-Key header', problem: problems.missingSubscriptionKey() },
        invalidKey: { summary: 'Unknown or revoked key', problem: problems.invalidSubscriptionKey() },
        missingToken: { summary: 'No Bearer token', problem: problems.missingAccessToken() },
        expiredToken: {
          summary: 'Expired token',
          problem: problems.invalidAccessToken('The access token expired'),
        },
        otherTenant: {
          summary: 'Key and token of different tenants',
          problem: problems.credentialsOfDifferentTenants(),
        },
      }),
    ),
  },
  TooManyRequests: {
    description:
      'More requests for this subscription key in the current minute than RATE_LIMIT_PER_MINUTE allows ' +
      '(shared by every instance on one PostgreSQL). Every /api and /v1 answer carries the RateLimit fields.',
    headers: {
      'Retry-After': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
      'RateLimit-Limit': { description: 'Requests allowed per window', schema: { type: 'integer' } },
      'RateLimit-Remaining': { description: 'Requests left in this window', schema: { type: 'integer' } },
      'RateLimit-Reset': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
    },
    content: problemContent(
      problemExamples({
        limited: { summary: 'Over the limit', problem: problems.tooManyRequests(1200, 60, 17, {}) },
      }),
    ),
  },
  UnsupportedMediaType: {
    description: 'The body is not sent as Content-Type: application/json.',
    content: problemContent(
      problemExamples({
        notJson: { summary: 'Form or text body', problem: problems.unsupportedMediaType() },
      }),
    ),
  },
  ServerError: {
    description:
      'An unexpected failure. The message starts with one of four prefixes; the detail names a category ' +
      'and the request id (also in the X-Request-Id header), never SQL or internals. "Error connecting to ' +
      'database" is a batch endpoint\'s answer only, with Retry-After: nothing was written, send the same ' +
      'batch again after it; the other endpoints answer 503 then.',
    headers: {
      'Retry-After': {
        description: `With "Error connecting to database" only: seconds to wait before sending again (${DATABASE_RETRY_AFTER_SECONDS})`,
        schema: { type: 'integer' },
      },
    },
    content: problemContent(
      problemExamples({
        validation: {
          summary: 'Unexpected validation error',
          problem: serverError(new ValidationCrash(new Error('bug'))),
        },
        connection: {
          summary: 'Error connecting to database',
          problem: serverError(withCode('ECONNREFUSED')),
        },
        database: { summary: 'Database operation failed', problem: serverError(withCode('23505')) },
        other: { summary: 'Unexpected error', problem: serverError(new Error('bug')) },
      }),
    ),
  },
  /** Every endpoint but the contract's batch endpoints (theirs is ServerError's connection answer). */
  DatabaseUnavailable: {
    description:
      'The database cannot be reached or takes no writes (a failover, a restart): come back after ' +
      'Retry-After seconds. Nothing was written.',
    headers: {
      'Retry-After': {
        description: `Seconds to wait before sending again (${DATABASE_RETRY_AFTER_SECONDS})`,
        schema: { type: 'integer' },
      },
    },
    content: problemContent(
      problemExamples({
        unavailable: {
          summary: 'Error connecting to database',
          problem: problems.databaseUnavailable(serverErrorMessage(withCode('ECONNREFUSED'), 'req-1a'), 503),
        },
      }),
    ),
  },
};

/** 413 of an endpoint whose body limit is limit bytes. */
export function bodyTooLargeResponse(limit: number): OpenApiObject {
  return {
    description: `The body is larger than ${limit} bytes (refused before it is read).`,
    content: problemContent(
      problemExamples({ tooLarge: { summary: 'Body too large', problem: problems.bodyTooLarge(limit) } }),
    ),
  };
}
