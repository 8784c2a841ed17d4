import { randomUUID } from 'node:crypto';
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';

export interface TenantApp {
  app: FastifyInstance;
  tenantId: number;
  /** The credentials every request of this tenant sends: Subscription-Key and Authorization. */
  headers: Readonly<Record<string, string>>;
  /** POSTs a JSON body (or raw text) and returns status and parsed body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** GETs a path (with its query string) and returns status and parsed body. */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

/** Token settings of test apps: the signing secret is generated and kept in the test database. */
export const testAuthConfig = { tokenSecret: undefined, tokenTtlSeconds: 3600 } as const;

/** An access token for the tenant's API client, through POST /token as an integrator gets one. */
export async function tokenFor(app: FastifyInstance, tenant: NewTenant): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: tenant.clientId,
      client_secret: tenant.clientSecret,
    }).toString(),
  });
  if (response.statusCode !== 200) throw new Error(`POST /token: ${response.statusCode} ${response.body}`);
  return response.json().access_token;
}

/**
 * The app as one tenant sees it: a fresh tenant with real credentials (made by the function the
 * command line uses), a real token from POST /token, and both headers on every request.
 */
export async function appForNewTenant(
  db: Database,
  config: Partial<AppOptions['config']> = {},
): Promise<TenantApp> {
  const tenant = await createTenant(db, `test-${randomUUID()}`);
  const app = await buildApp({ db, config: { ...testAuthConfig, ...config }, logLevel: 'silent' });
  after(() => app.close());
  const credentials = {
    'subscription-key': tenant.subscriptionKey,
    authorization: `Bearer ${await tokenFor(app, tenant)}`,
  };
  return {
    app,
    tenantId: tenant.tenantId,
    headers: credentials,
    async post(path, body, headers = {}) {
      const response = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', ...credentials, ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.statusCode, body: response.json() };
    },
    async get(path, headers = {}) {
      const response = await app.inject({
        method: 'GET',
        url: path,
        headers: { ...credentials, ...headers },
      });
      return { status: response.statusCode, body: response.json() };
    },
  };
}

/** Loads products into the tenant's product master, so stocks, factors and prices can refer to them. */
export async function seedProducts(tenant: TenantApp, codes: readonly string[]): Promise<void> {
  const response = await tenant.post(
    '/api/products/batch-create',
    codes.map((code) => ({ code, description: `product ${code}` })),
  );
  if (response.status !== 201) throw new Error(`seeding products failed: ${JSON.stringify(response.body)}`);
}
