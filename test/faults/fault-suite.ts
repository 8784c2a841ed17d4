import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import pg from 'pg';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { type HttpTransport, httpTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';
import { requireDatabaseUrl, type ServerProcess, startServerProcess } from './faults-server.js';

/*
 * The setup every fault suite (test/faults/) shares, written once: a database of its own on the
 * PostgreSQL of TEST_DATABASE_URL, a plain connection to watch and kill the service's statements,
 * built servers killed when their test ends, and new tenants signed in over HTTP.
 */

/** A database of the suite's own, with a pool for the test's own SQL. */
interface FaultDatabase {
  readonly url: string;
  /** Its name, as pg_stat_activity shows it (datname). */
  readonly name: string;
  readonly db: Database;
}

export interface FaultSuite {
  /** The PostgreSQL server the suite disturbs (TEST_DATABASE_URL). */
  readonly serverUrl: string;
  readonly database: FaultDatabase;
  /** A plain connection to the server for pg_stat_activity and pg_terminate_backend. */
  readonly admin: pg.Client;
  /** The built server on the suite's database (env on top of the suite's), killed when the test ends. */
  startServer(env?: Record<string, string>): Promise<ServerProcess>;
  /**
   * A new tenant in the suite's database, signed in at server; any other instance on the database
   * accepts its token (tenant.over(httpTransport(url))).
   */
  newTenant(server: { readonly url: string }): Promise<TenantClient<NewTenant, HttpTransport>>;
}

/**
 * Registers the suite's before() and after() hooks: call it inside the suite's describe(). The
 * database is migrated unless told not to (two instances migrating an empty one is a test of its own).
 */
export function faultSuite(options: { migrated?: boolean } = {}): FaultSuite {
  const serverUrl = requireDatabaseUrl();
  let database: (FaultDatabase & { drop(): Promise<void> }) | undefined;
  let admin: pg.Client | undefined;
  before(async () => {
    database = await faultDatabase(serverUrl, options.migrated ?? true);
    admin = await adminClient(serverUrl);
  });
  after(async () => {
    // The outage suite may have ended the connection already (its server was stopped).
    await admin?.end().catch(() => {});
    await database?.drop();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the fault suite is used before its before() hook ran');
    return value;
  };
  return {
    serverUrl,
    get database() {
      return ready(database);
    },
    get admin() {
      return ready(admin);
    },
    async startServer(env = {}) {
      const server = await startServerProcess(ready(database).url, env);
      after(() => server.kill());
      return server;
    },
    async newTenant(server) {
      const tenant = await createTenant(ready(database).db, `faults-${randomUUID()}`);
      return tenantClient(httpTransport(server.url), tenant);
    },
  };
}

/** What of the tenant no log may show: its subscription key, client secret and access token. */
export function secretsOf(tenant: TenantClient<NewTenant>): string[] {
  return [tenant.tenant.subscriptionKey, tenant.tenant.clientSecret, tenant.accessToken];
}

async function faultDatabase(serverUrl: string, migrated: boolean) {
  const scratch = await scratchPostgresDatabase(serverUrl, { prefix: 'sfa_faults' });
  const db: Database = openPostgres({
    connectionString: scratch.url,
    poolSize: 3,
    applicationName: 'sfa-faults-test',
    onPoolError: () => {},
  });
  if (migrated) await migrate(db);
  return {
    url: scratch.url,
    name: scratch.name,
    db,
    async drop() {
      await db.close().catch(() => {});
      await scratch.drop();
    },
  };
}

async function adminClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'sfa-faults-admin' });
  client.on('error', () => {});
  await client.connect();
  return client;
}
