import Fastify, { type FastifyInstance } from 'fastify';
import { createAuth } from './auth/auth.js';
import { registerBatchRoute } from './batch/batch-route.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { installErrorHandling } from './http/error-handler.js';
import { parseJsonBody } from './http/json-body.js';
import { loggerOptions } from './http/logger.js';
import { problems } from './http/problems.js';
import { registerDocs } from './openapi/docs-routes.js';
import { registerReadRoutes } from './read/read-routes.js';
import { batchResources } from './resources/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant whose rows this request may see and change; set by the authentication guard. */
    tenantId: number;
  }
}

export interface AppOptions {
  db: Database;
  /** Token signing: TOKEN_SECRET (else a secret generated and kept in the database) and token lifetime. */
  config: Pick<Config, 'tokenSecret' | 'tokenTtlSeconds'>;
  logLevel?: string;
}

/** The whole HTTP service as a Fastify instance; tests call inject() on it without listening. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(options.logLevel ?? 'info'),
    requestIdHeader: 'x-request-id',
    // Slow clients must not hold sockets forever (slowloris).
    requestTimeout: 120_000,
    connectionTimeout: 0,
    return503OnClosing: true,
  });
  app.decorateRequest('tenantId', 0);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installErrorHandling(app);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch {
      done(problems.invalidJson(), undefined);
    }
  });

  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    try {
      await options.db.query('SELECT 1');
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  // Guard of every /api and /v1 route: runs before the body is read, sets request.tenantId.
  const { authenticate, tokenRoutes } = createAuth(options);
  await app.register(tokenRoutes);

  for (const resource of batchResources) {
    registerBatchRoute(app, resource, { db: options.db, authenticate });
  }
  registerReadRoutes(app, { db: options.db, authenticate });
  registerDocs(app);
  return app;
}
