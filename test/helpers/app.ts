import { randomUUID } from 'node:crypto';
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { type InjectTransport, injectTransport } from '../../kit/transport.js';
import { type AppOptions, buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';

/*
 * A new tenant and an app to talk to it through inject (kit/tenant-client.ts over kit/transport.ts).
 * The tenant is made by the function the command line uses, and signs in through the app's own
 * POST /token, so tests see what an integrator sees.
 */

/** Token settings of test apps: the signing secret is generated and kept in the test database. */
export const testAuthConfig = { tokenSecret: undefined, tokenTtlSeconds: 3600 } as const;

/** A new tenant on a new app, signed in; the app is closed after the test file. */
export async function appForNewTenant(
  db: Database,
  config: Partial<AppOptions['config']> = {},
): Promise<TenantClient<NewTenant, InjectTransport>> {
  const tenant = await createTenant(db, `test-${randomUUID()}`);
  const app = await buildApp({ db, config: { ...testAuthConfig, ...config }, logLevel: 'silent' });
  after(() => app.close());
  return tenantClient(injectTransport(app), tenant);
}

/**
 * A new tenant on an app whose life the caller owns (transport.app.close()): for suites that share
 * one app across tests or build apps with options of their own (beyond db and the test token
 * settings). `existing` gives the app, and optionally the tenant, to use instead of new ones.
 */
export async function ownedTenantApp(
  db: Database,
  options: Partial<Omit<AppOptions, 'db'>> = {},
  existing?: { app: FastifyInstance; tenant?: NewTenant },
): Promise<TenantClient<NewTenant, InjectTransport>> {
  const tenant = existing?.tenant ?? (await createTenant(db, `test-${randomUUID()}`));
  const app =
    existing?.app ?? (await buildApp({ db, config: testAuthConfig, logLevel: 'silent', ...options }));
  return tenantClient(injectTransport(app), tenant);
}

/** Loads products into the tenant's product master, so stocks, factors and prices can refer to them. */
export async function seedProducts(tenant: TenantClient, codes: readonly string[]): Promise<void> {
  const response = await tenant.post(
    '/api/products/batch-create',
    codes.map((code) => ({ code, description: `product ${code}` })),
  );
  if (response.status !== 201) throw new Error(`seeding products failed: ${JSON.stringify(response.body)}`);
}
