import Type from 'typebox';
import type { RouteDeclaration } from '../../http/route-schema.js';

/*
 * POST /token (extensions.md 2; RFC 6749 4.4), declared once: the route takes it, the body's check
 * reads it (src/routes/token/token-route-request.ts) and the document shows it as `TokenRequest`.
 */

/** The one grant the service gives; any other is unsupported_grant_type (RFC 6749 5.2). */
export const GRANT_TYPE = 'client_credentials';
export const GRANT_TYPE_REQUIRED = 'grant_type is required';

/** An empty or null parameter counts as omitted (RFC 6749 3.1): the check drops them first. */
export const tokenRequestBody = Type.Object(
  {
    // Its message is for a value that is not a string: another grant's name is unsupported_grant_type.
    grant_type: Type.Enum([GRANT_TYPE], { errorMessage: 'grant_type must be a string' }),
    client_id: Type.Optional(
      Type.String({ description: 'the API client id', errorMessage: 'client_id must be a string' }),
    ),
    client_secret: Type.Optional(
      Type.String({
        description: 'the API client secret',
        format: 'password',
        errorMessage: 'client_secret must be a string',
      }),
    ),
  },
  {
    description:
      'Client credentials grant. client_id and client_secret go here, or in an Authorization: Basic header ' +
      '(then not here): one method per request.',
    errorMessage: { type: 'The request body must be a form or a JSON object', required: GRANT_TYPE_REQUIRED },
  },
);

export const tokenRoute = {
  method: 'POST',
  url: '/token',
  schema: {
    operationId: 'createAccessToken',
    tags: ['Authentication'],
    summary: 'Get an access token (OAuth 2.0 client credentials)',
    description:
      'Exchanges the client id and secret of an API client for a Bearer access token. Credentials come in a ' +
      'form or JSON body, or as HTTP Basic. A Subscription-Key header is optional here; when present it must ' +
      'be valid and belong to the same tenant as the client. Repeated failures are throttled (429).',
    consumes: ['application/x-www-form-urlencoded', 'application/json'],
    body: tokenRequestBody,
  },
} as const satisfies RouteDeclaration;
