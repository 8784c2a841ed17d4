import type { OpenApiObject } from './json-schema.js';

/** Names of the two security schemes: both are required together on every /api and /v1 operation. */
export const SUBSCRIPTION_KEY = 'subscriptionKey';
export const CLIENT_CREDENTIALS = 'clientCredentials';

/** The security requirement of /api and /v1 operations: one requirement holding both schemes (AND). */
export const apiSecurity = [{ [SUBSCRIPTION_KEY]: [], [CLIENT_CREDENTIALS]: [] }];
/** Operations open to anyone. */
export const noSecurity: OpenApiObject[] = [];

/** extensions.md 2. */
export const securitySchemes: Record<string, OpenApiObject> = {
  [SUBSCRIPTION_KEY]: {
    type: 'apiKey',
    in: 'header',
    name: 'Subscription-Key',
    description: "The tenant's subscription key, shown once when it was created.",
  },
  [CLIENT_CREDENTIALS]: {
    type: 'oauth2',
    description:
      'OAuth 2.0 client credentials grant (RFC 6749 4.4): POST /token with the client id and secret of an ' +
      'API client of the same tenant as the subscription key, then send Authorization: Bearer <access_token>.',
    flows: { clientCredentials: { tokenUrl: '/token', scopes: {} } },
  },
};
