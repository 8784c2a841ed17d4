import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { newTenant } from './backends.js';

export interface TenantApp {
  app: FastifyInstance;
  tenantId: number;
  /** POSTs a JSON body (or raw text) and returns status and parsed body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** GETs a path (with its query string) and returns status and parsed body. */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

/** The app as one tenant sees it: a fresh tenant, every request authenticated as it. */
export async function appForNewTenant(db: Database): Promise<TenantApp> {
  const tenantId = await newTenant(db);
  const app = await buildApp({
    db,
    logLevel: 'silent',
    authenticate: async (request) => {
      request.tenantId = tenantId;
    },
  });
  after(() => app.close());
  return {
    app,
    tenantId,
    async post(path, body, headers = {}) {
      const response = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.statusCode, body: response.json() };
    },
    async get(path, headers = {}) {
      const response = await app.inject({ method: 'GET', url: path, headers });
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
