import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { ensureTenant } from './tenants/tenants.js';

export interface RunningServer {
  app: FastifyInstance;
  db: Database;
  url: string;
  /** Stops accepting, finishes requests in flight, closes the database. */
  close(): Promise<void>;
}

/** Opens the database, brings the schema up to date, and listens. */
export async function startServer(config: Config): Promise<RunningServer> {
  let app: FastifyInstance | undefined;
  const db = await openDatabase(config, (error) => app?.log.error({ err: error }, 'database pool error'));
  await migrate(db);
  // Until credentials exist every request belongs to one built-in tenant.
  const tenantId = await ensureTenant(db, 'default');
  const authenticate: onRequestHookHandler = async (request) => {
    request.tenantId = tenantId;
  };
  app = await buildApp({ db, authenticate, logLevel: config.logLevel });
  const url = await app.listen({ port: config.port, host: config.host });
  return {
    app,
    db,
    url,
    async close() {
      await app.close();
      await db.close();
    },
  };
}
