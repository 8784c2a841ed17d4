import { fetchedHeaders } from '../../kit/token.js';
import type { RunningServer } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';

export interface ServedTenant {
  /** Sends a request with the tenant's credentials to the listening server; status and parsed body. */
  call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/** Status and body of a request over HTTP, the body parsed when it is JSON. */
export async function request(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  return { status: response.status, body, headers: response.headers };
}

/**
 * A new tenant of a listening server (startServer), with a token from its POST /token (kit/token.ts): requests go
 * over real HTTP to the process as `sfa-backoffice serve` runs it.
 */
export async function servedTenant(
  server: Pick<RunningServer, 'db' | 'url'>,
  name: string,
): Promise<ServedTenant> {
  const tenant = await createTenant(server.db, name);
  const headers = await fetchedHeaders(server.url, tenant);
  return {
    call(method, path, body) {
      return request(`${server.url}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    },
  };
}
