import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig, tokenFor } from './app.js';

/**
 * A tenant with real credentials and a token, on an app whose life the caller owns (close()): for
 * suites that share one app across tests or build apps with options of their own.
 */
export interface OwnedTenantApp {
  app: FastifyInstance;
  tenant: NewTenant;
  tenantId: number;
  headers: Readonly<Record<string, string>>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** A new tenant on an app of its own (options beyond db and the test token settings may be given). */
export async function ownedTenantApp(
  db: Database,
  options: Partial<Omit<AppOptions, 'db'>> = {},
  existing?: { app: FastifyInstance; tenant?: NewTenant },
): Promise<OwnedTenantApp> {
  const tenant = existing?.tenant ?? (await createTenant(db, `test-${randomUUID()}`));
  const app =
    existing?.app ?? (await buildApp({ db, config: testAuthConfig, logLevel: 'silent', ...options }));
  const headers = {
    'subscription-key': tenant.subscriptionKey,
    authorization: `Bearer ${await tokenFor(app, tenant)}`,
  };
  const parse = (text: string) => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
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
