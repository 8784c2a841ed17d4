import { randomUUID } from 'node:crypto';
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { injectedHeaders, type TenantHeaders } from '../../kit/token.js';
import { type AppOptions, buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';

/** One tenant's view of an app: its credentials on every request, through inject. */
export interface TenantApp {
  app: FastifyInstance;
  tenant: NewTenant;
  tenantId: number;
  /** The credentials every request of this tenant sends: Subscription-Key and Authorization. */
  headers: TenantHeaders;
  /** POSTs a JSON body (or raw text); status and body, parsed when it is JSON (else the text). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** GETs a path (with its query string); status and body, parsed when it is JSON (else the text). */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** Closes the app (appForNewTenant's closes itself after the test file; ownedTenantApp's do not). */
  close(): Promise<void>;
}

/** Kept for the suites that name it: an app whose life the caller owns is the same TenantApp. */
export type OwnedTenantApp = TenantApp;

/** Token settings of test apps: the signing secret is generated and kept in the test database. */
export const testAuthConfig = { tokenSecret: undefined, tokenTtlSeconds: 3600 } as const;

const parse = (text: string) => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** The tenant's view of app: a real token from its POST /token (kit/token.ts), both headers on each request. */
export async function tenantView(app: FastifyInstance, tenant: NewTenant): Promise<TenantApp> {
  const headers = await injectedHeaders(app, tenant);
  return {
    app,
    tenant,
    tenantId: tenant.tenantId,
    headers,
    async post(path, body, extra = {}) {
      const response = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', ...headers, ...extra },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.statusCode, body: parse(response.body) };
    },
    async get(path, extra = {}) {
      const response = await app.inject({ method: 'GET', url: path, headers: { ...headers, ...extra } });
      return { status: response.statusCode, body: parse(response.body) };
    },
    close: () => app.close(),
  };
}

/**
 * The app as one tenant sees it: a fresh tenant with real credentials (made by the function the
 * command line uses), a real token from POST /token, and both headers on every request. The app is
 * closed after the test file.
 */
export async function appForNewTenant(
  db: Database,
  config: Partial<AppOptions['config']> = {},
): Promise<TenantApp> {
  const tenant = await createTenant(db, `test-${randomUUID()}`);
  const app = await buildApp({ db, config: { ...testAuthConfig, ...config }, logLevel: 'silent' });
  after(() => app.close());
  return tenantView(app, tenant);
}

/**
 * A new tenant on an app whose life the caller owns (close()): for suites that share one app across
 * tests or build apps with options of their own (beyond db and the test token settings). `existing`
 * gives the app, and optionally the tenant, to use instead of new ones.
 */
export async function ownedTenantApp(
  db: Database,
  options: Partial<Omit<AppOptions, 'db'>> = {},
  existing?: { app: FastifyInstance; tenant?: NewTenant },
): Promise<TenantApp> {
  const tenant = existing?.tenant ?? (await createTenant(db, `test-${randomUUID()}`));
  const app =
    existing?.app ?? (await buildApp({ db, config: testAuthConfig, logLevel: 'silent', ...options }));
  return tenantView(app, tenant);
}

/** Loads products into the tenant's product master, so stocks, factors and prices can refer to them. */
export async function seedProducts(tenant: TenantApp, codes: readonly string[]): Promise<void> {
  const response = await tenant.post(
    '/api/products/batch-create',
    codes.map((code) => ({ code, description: `product ${code}` })),
  );
  if (response.status !== 201) throw new Error(`seeding products failed: ${JSON.stringify(response.body)}`);
}
