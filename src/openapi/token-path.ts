import { oauthProblems } from '../http/problems.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { noSecurity } from './security.js';

/** The bodies of POST /token (RFC 6749 4.4 and 5). */
export const tokenSchemas: Record<string, JsonSchema> = {
  TokenRequest: {
    type: 'object',
    description:
      'Client credentials grant. client_id and client_secret go here, or in an Authorization: Basic header ' +
      '(then not here): one method per request.',
    required: ['grant_type'],
    properties: {
      grant_type: { type: 'string', enum: ['client_credentials'] },
      client_id: { type: 'string', description: 'the API client id' },
      client_secret: { type: 'string', description: 'the API client secret', format: 'password' },
    },
  },
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
        enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'slow_down'],
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

/** POST /token (extensions.md 2). */
export const tokenPath: OpenApiObject = {
  post: {
    tags: ['Authentication'],
    operationId: 'createAccessToken',
    summary: 'Get an access token (OAuth 2.0 client credentials)',
    description:
      'Exchanges the client id and secret of an API client for a Bearer access token. Credentials come in a ' +
      'form or JSON body, or as HTTP Basic. A Subscription-Key header is optional here; when present it must ' +
      'be valid and belong to the same tenant as the client. Repeated failures are throttled (429).',
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
    requestBody: {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: schemaRef('TokenRequest'),
          example: {
            grant_type: 'client_credentials',
            client_id: 'cl_0123456789abcdef',
            client_secret: 'SECRET',
          },
        },
        'application/json': {
          schema: schemaRef('TokenRequest'),
          example: {
            grant_type: 'client_credentials',
            client_id: 'cl_0123456789abcdef',
            client_secret: 'SECRET',
          },
        },
      },
    },
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
    },
  },
};
