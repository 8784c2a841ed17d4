import type { Answer, Transport } from './transport.js';

/**
 * A tenant's credentials as an integrator uses them: an access token from POST /token (client
 * credentials, form-encoded), then Subscription-Key and Authorization on every request. Tests of
 * /token itself (auth.test.ts, token-flood.test.ts, ...) build their requests by hand on purpose.
 */

/** The API client of a tenant (createTenant's NewTenant, `tenant create --json`'s output). */
export interface ApiClient {
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface ApiTenant extends ApiClient {
  readonly subscriptionKey: string;
}

/** The headers every request of the tenant carries. */
export type TenantHeaders = { readonly 'subscription-key': string; readonly authorization: string };

export const FORM = 'application/x-www-form-urlencoded';

/** The body of POST /token for this client. */
export function tokenForm(client: ApiClient): string {
  return new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  }).toString();
}

export function tenantHeaders(subscriptionKey: string, accessToken: string): TenantHeaders {
  return { 'subscription-key': subscriptionKey, authorization: `Bearer ${accessToken}` };
}

export interface TokenOptions {
  /** Send the tenant's Subscription-Key with the token request too (optional for /token). */
  subscriptionKey?: string;
}

function tokenRequestHeaders(options: TokenOptions): Record<string, string> {
  return {
    'content-type': FORM,
    ...(options.subscriptionKey ? { 'subscription-key': options.subscriptionKey } : {}),
  };
}

function accessTokenOf(answer: Answer): string {
  const token = (answer.body as { access_token?: unknown } | undefined)?.access_token;
  if (answer.status !== 200 || typeof token !== 'string') {
    throw new Error(`POST /token: ${answer.status} ${answer.text}`);
  }
  return token;
}

const TOKEN_ATTEMPTS = 5;

/**
 * Sends the token request until it is not a 503 (Retry-After: the process's secret hashing is busy,
 * which concurrent sign-ins from one address in one process, as tests make, can hit), as an
 * integrator retries; at most TOKEN_ATTEMPTS times.
 */
async function untilNotBusy(send: () => Promise<Answer>): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const answer = await send();
    if (answer.status !== 503 || attempt >= TOKEN_ATTEMPTS) return accessTokenOf(answer);
    await new Promise((done) => setTimeout(done, 1_000 * Number(answer.headers['retry-after'] ?? 1)));
  }
}

/** An access token from the service's POST /token, through inject or over HTTP (kit/transport.ts). */
export function accessToken(
  transport: Transport,
  client: ApiClient,
  options: TokenOptions = {},
): Promise<string> {
  return untilNotBusy(() =>
    transport.send({
      method: 'POST',
      path: '/token',
      headers: tokenRequestHeaders(options),
      body: tokenForm(client),
    }),
  );
}
