import {
  type ApiTenant,
  accessToken,
  type TenantHeaders,
  type TokenOptions,
  tenantHeaders,
} from './token.js';
import type { Answer, ServiceRequest, Transport } from './transport.js';

/**
 * A tenant as an integrator talks to the service: signed in once (a real token from POST /token),
 * then Subscription-Key and Authorization on every request. The one client of tests and benchmarks;
 * the transport decides whether it goes through inject or over HTTP.
 */
export interface TenantClient<C extends ApiTenant = ApiTenant, T extends Transport = Transport> {
  /** The tenant as it was made (createTenant's NewTenant, `tenant create --json`'s output). */
  readonly tenant: C;
  readonly transport: T;
  /** The token from POST /token (for the checks that no log shows it). */
  readonly accessToken: string;
  /** What every request carries: Subscription-Key and Authorization. */
  readonly headers: TenantHeaders;
  /** Any request, with the tenant's headers; the request's own headers win. */
  send(request: ServiceRequest): Promise<Answer>;
  /** GETs a path (with its query string). */
  get(path: string, headers?: Readonly<Record<string, string>>): Promise<Answer>;
  /** POSTs a body as JSON; a string is sent as it is (malformed JSON, a prepared batch). */
  post(path: string, body: unknown, headers?: Readonly<Record<string, string>>): Promise<Answer>;
  /**
   * The same signed-in tenant over another transport: another instance of the service on the same
   * database accepts the token, so the fault suite follows a tenant across restarts and instances.
   */
  over<U extends Transport>(transport: U): TenantClient<C, U>;
}

/** Signs the tenant in over the transport (kit/token.ts) and returns its client. */
export async function tenantClient<C extends ApiTenant, T extends Transport>(
  transport: T,
  tenant: C,
  options: TokenOptions = {},
): Promise<TenantClient<C, T>> {
  return signedIn(transport, tenant, await accessToken(transport, tenant, options));
}

function signedIn<C extends ApiTenant, T extends Transport>(
  transport: T,
  tenant: C,
  token: string,
): TenantClient<C, T> {
  const headers = tenantHeaders(tenant.subscriptionKey, token);
  const send = (request: ServiceRequest) =>
    transport.send({ ...request, headers: { ...headers, ...request.headers } });
  return {
    tenant,
    transport,
    accessToken: token,
    headers,
    send,
    get: (path, extra) => send({ path, headers: extra }),
    post: (path, body, extra) =>
      send({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...extra },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    over: (other) => signedIn(other, tenant, token),
  };
}
