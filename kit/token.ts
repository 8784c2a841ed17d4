import type { FastifyInstance } from 'fastify';

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

/** An app (buildApp) to send the token request to through inject. */
export type Injector = Pick<FastifyInstance, 'inject'>;

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

function accessTokenOf(status: number, text: string): string {
  let token: unknown;
  try {
    token = (JSON.parse(text) as { access_token?: unknown }).access_token;
  } catch {
    // not JSON: refused below
  }
  if (status !== 200 || typeof token !== 'string') throw new Error(`POST /token: ${status} ${text}`);
  return token;
}

const TOKEN_ATTEMPTS = 5;

/**
 * Sends the token request until it is not a 503 (Retry-After: the process's secret hashing is busy,
 * which concurrent sign-ins from one address in one process, as tests make, can hit), as an
 * integrator retries; at most TOKEN_ATTEMPTS times.
 */
async function untilNotBusy(
  send: () => Promise<{ status: number; text: string; retryAfter: string | undefined }>,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const { status, text, retryAfter } = await send();
    if (status !== 503 || attempt >= TOKEN_ATTEMPTS) return accessTokenOf(status, text);
    await new Promise((done) => setTimeout(done, 1_000 * Number(retryAfter ?? 1)));
  }
}

/** An access token from the app's POST /token, through app.inject. */
export function injectedToken(app: Injector, client: ApiClient, options: TokenOptions = {}): Promise<string> {
  return untilNotBusy(async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/token',
      headers: tokenRequestHeaders(options),
      payload: tokenForm(client),
    });
    const retryAfter = response.headers['retry-after'];
    return { status: response.statusCode, text: response.body, retryAfter: retryAfter?.toString() };
  });
}

/** An access token from POST /token of the server listening at baseUrl (http://127.0.0.1:PORT). */
export function fetchedToken(
  baseUrl: string,
  client: ApiClient,
  options: TokenOptions = {},
): Promise<string> {
  return untilNotBusy(async () => {
    const response = await fetch(`${baseUrl}/token`, {
      method: 'POST',
      headers: tokenRequestHeaders(options),
      body: tokenForm(client),
    });
    const text = await response.text();
    return { status: response.status, text, retryAfter: response.headers.get('retry-after') ?? undefined };
  });
}

/** The tenant's request headers, with a token from the app (inject). */
export async function injectedHeaders(app: Injector, tenant: ApiTenant): Promise<TenantHeaders> {
  return tenantHeaders(tenant.subscriptionKey, await injectedToken(app, tenant));
}

/** The tenant's request headers, with a token from the listening server at baseUrl. */
export async function fetchedHeaders(
  baseUrl: string,
  tenant: ApiTenant,
  options: TokenOptions = {},
): Promise<TenantHeaders> {
  return tenantHeaders(tenant.subscriptionKey, await fetchedToken(baseUrl, tenant, options));
}
