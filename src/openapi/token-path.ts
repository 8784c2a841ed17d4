import { oauthProblems } from '../http/problems.js';
import { tokenRequestBody, tokenRoute } from '../routes/token/token-schema.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { declaredPaths, type OperationAnswers, publicSchema } from './route-operations.js';
import { noSecurity } from './security.js';

/** The bodies of POST /token (RFC 6749 4.4 and 5). */
export const tokenSchemas: Record<string, JsonSchema> = {
  TokenRequest: publicSchema(tokenRequestBody),
  TokenResponse: {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in'],
    properties: {
      access_token: { type: 'string', description: 'send as Authorization: Bearer <access_token>' },
      token_type: { const: 'Bearer' },
      expires_in: { type: 'integer', minimum: 1, description: 'lifetime of the token in seconds' },
    },
  },
  OAuthError: {
    type: 'object',
    description: 'The error response of RFC 6749 5.2.',
    required: ['error', 'error_description'],
    properties: {
      error: {
        type: 'string',
        enum: [
          'invalid_request',
          'invalid_client',
          'unsupported_grant_type',
          'slow_down',
          'temporarily_unavailable',
        ],
      },
      error_description: { type: 'string' },
    },
  },
};

const oauthContent = (examples: Record<string, { summary: string; problem: { body(): object } }>) => ({
  'application/json': {
    schema: schemaRef('OAuthError'),
    examples: Object.fromEntries(
      Object.entries(examples).map(([name, { summary, problem }]) => [
        name,
        { summary, value: problem.body() },
      ]),
    ),
  },
});

const noStore = {
  'Cache-Control': { description: 'no-store (RFC 6749 5.1)', schema: { type: 'string' } },
};

const example = {
  grant_type: 'client_credentials',
  client_id: 'cl_0123456789abcdef',
  client_secret: 'SECRET',
};

/** What POST /token answers; what it takes is declared on its route. */
const answers: OperationAnswers = {
  security: noSecurity,
  parameters: [
    {
      name: 'Subscription-Key',
      in: 'header',
      required: false,
      description: 'optional; checked when present',
      schema: { type: 'string' },
    },
  ],
  bodyComponent: 'TokenRequest',
  requestExample: example,
  responses: {
    '200': {
      description: 'An access token.',
      headers: noStore,
      content: {
        'application/json': {
          schema: schemaRef('TokenResponse'),
          example: {
            access_token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9...',
            token_type: 'Bearer',
            expires_in: 3600,
          },
        },
      },
    },
    '400': {
      description: 'A malformed request, or client credentials refused when sent in the body.',
      headers: noStore,
      content: oauthContent({
        missingGrant: {
          summary: 'No grant_type',
          problem: oauthProblems.invalidRequest('grant_type is required'),
        },
        wrongGrant: { summary: 'Another grant type', problem: oauthProblems.unsupportedGrantType() },
        refused: {
          summary: 'Wrong client id or secret',
          problem: oauthProblems.invalidClient('Client authentication failed', false),
        },
      }),
    },
    '401': {
      description: 'Client credentials refused when sent with HTTP Basic.',
      headers: {
        ...noStore,
        'WWW-Authenticate': { description: 'Basic challenge', schema: { type: 'string' } },
      },
      content: oauthContent({
        refused: {
          summary: 'Wrong client id or secret (Basic)',
          problem: oauthProblems.invalidClient('Client authentication failed', true),
        },
      }),
    },
    '429': {
      description: 'Too many failed attempts for this client id or address.',
      headers: {
        ...noStore,
        'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } },
      },
      content: oauthContent({
        throttled: { summary: 'Throttled', problem: oauthProblems.tooManyFailures(42) },
      }),
    },
    '500': responseRef('ServerError'),
    '503': {
      description:
        'Come back after Retry-After seconds: the database cannot be reached, or too many client secrets ' +
        'are being checked at once.',
      headers: {
        ...noStore,
        'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } },
      },
      content: oauthContent({
        database: { summary: 'The database cannot be reached', problem: oauthProblems.databaseUnavailable() },
        busy: { summary: 'Too many secrets being checked', problem: oauthProblems.hashingBusy(1) },
      }),
    },
  },
};

/** POST /token (extensions.md 2). */
export const tokenPath: OpenApiObject = declaredPaths([tokenRoute], { createAccessToken: answers })[
  tokenRoute.url
]!;
