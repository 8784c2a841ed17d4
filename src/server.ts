import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { endWorkersWhenIdle } from './body-threads/batch-worker-pool.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { sqlState } from './db/failures.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { seedDemoData } from './demo/seed-demo.js';
import { renumberedText, renumberFeedAfterRestore } from './feed/renumbering.js';
import { loadMallocTrim, QuietTrim } from './memory-trim.js';
import { hasTenants } from './sql/tenants.js';
import { createTenant, type NewTenant } from './tenants/tenants.js';
import { favourMemoryOverSpeed, favourSpeedOverMemory } from './v8-by-engine.js';

export interface RunningServer {
  app: FastifyInstance;
  db: Database;
  url: string;
  /** The demo tenant made at the first start on an empty embedded database, with its credentials. */
  demo: NewTenant | undefined;
  /** Stops accepting, finishes requests in flight, closes the database. */
  close(): Promise<void>;
}

/**
 * A newcomer's first start (embedded database, nothing in it yet) gets a "demo" tenant with sample data,
 * so the API can be tried at once. Never on PostgreSQL: a shared database gets tenants on purpose only.
 */
async function createDemoTenant(db: Database): Promise<NewTenant | undefined> {
  if (db.sharedByProcesses || (await hasTenants(db))) return undefined;
  const demo = await createTenant(db, 'demo');
  await seedDemoData(db, demo.tenantId);
  return demo;
}

/**
 * Hands freed memory back to the system once the process has answered nothing for a while and runs
 * no bulk job: first after the start (PGlite's compilation, the migrations), then after each spell
 * of requests (a job's client polls it, so the end of a job is followed by one).
 */
function trimMemoryWhenQuiet(app: FastifyInstance): QuietTrim | undefined {
  const mallocTrim = loadMallocTrim();
  if (!mallocTrim) return undefined;
  const trim = new QuietTrim(
    () => {
      const before = process.memoryUsage.rss();
      const started = performance.now();
      mallocTrim();
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const after = process.memoryUsage.rss();
      app.log.debug({ rssMb: mb(after), handedBackMb: mb(before - after), ms }, 'freed memory handed back');
    },
    () => app.requestsInFlight() || app.jobs.running > 0,
  );
  app.requestsInFlight.onQuiet(() => trim.quiet());
  trim.quiet();
  return trim;
}

const mb = (bytes: number) => Math.round(bytes / 1_048_576);

/**
 * Opens the database (embedded: under the data directory lock), brings the schema up to date, and listens.
 * It also sets V8 to favour memory over speed on the embedded database, speed on PostgreSQL, for the
 * whole process: a later server of the same process (tests) keeps it.
 */
export async function startServer(config: Config): Promise<RunningServer> {
  let app: FastifyInstance | undefined;
  // V8 favours memory over speed on the embedded engine, speed on PostgreSQL, for the rest of the
  // process (src/v8-by-engine.ts).
  const v8Flag = config.databaseUrl ? favourSpeedOverMemory() : favourMemoryOverSpeed();
  // A session the server ended (a failover, a restart): a warning with its reason. Not the error
  // object, which pg hangs its whole client on (connection settings, the session's cancel key).
  const db = await openDatabase(config, (error) =>
    app?.log.warn({ code: sqlState(error), reason: error.message }, 'database pool error'),
  );
  try {
    await migrate(db);
    const renumbered = await renumberFeedAfterRestore(db);
    const demo = await createDemoTenant(db);
    // The embedded default runs in small VMs: its worker threads give their memory back at once.
    if (db.backend === 'pglite') endWorkersWhenIdle();
    app = await buildApp({ db, config, logLevel: config.logLevel });
    app.log.debug(
      { v8: v8Flag },
      db.backend === 'pglite'
        ? 'embedded engine: V8 favours memory over speed'
        : 'V8 favours speed over memory',
    );
    if (renumbered) app.log.warn({ feed: renumbered }, renumberedText(renumbered));
    const url = await app.listen({ port: config.port, host: config.host });
    // Beside the server: the background work (src/background/; stopped when the app closes).
    app.background.start();
    const running = app;
    const trim = trimMemoryWhenQuiet(running);
    return {
      app: running,
      db,
      url,
      demo,
      async close() {
        trim?.stop();
        try {
          await running.close();
        } finally {
          await db.close();
        }
      },
    };
  } catch (error) {
    await app?.close();
    await db.close();
    throw error;
  }
}
