import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';

/**
 * The one place that knows how the benchmark becomes a tenant of the service under test and what
 * headers its requests carry.
 */

export interface ServiceTenant {
  /** Name in the tenants table, for checking the written rows with SQL. */
  readonly name: string;
  /** Headers every request carries (besides Content-Type). */
  readonly headers: Readonly<Record<string, string>>;
}

export interface ServiceContext {
  /** Environment the server runs with (DATABASE_URL or DATA_DIR), for running its command line. */
  readonly env: NodeJS.ProcessEnv;
  /** Absolute path of bin/sfa-backoffice.js. */
  readonly cli: string;
  /** Starts the server and resolves to its base URL (http://127.0.0.1:PORT); call it exactly once. */
  start(): Promise<string>;
}

/** What `tenant create --json` prints (extensions.md 1). */
export interface CreatedTenant {
  tenant: string;
  subscriptionKey: string;
  clientId: string;
  clientSecret: string;
}

const run = promisify(execFile);

/**
 * `sfa-backoffice tenant create --name <prefix>-<random> --json`: run before the server starts (an
 * embedded DATA_DIR is used by one process at a time).
 */
export async function createTenant(
  env: NodeJS.ProcessEnv,
  cli: string,
  prefix = 'bench',
): Promise<CreatedTenant> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  const { stdout } = await run(process.execPath, [cli, 'tenant', 'create', '--name', name, '--json'], {
    env,
    timeout: 60_000,
  });
  // The command prints exactly one JSON object.
  return JSON.parse(stdout) as CreatedTenant;
}

/**
 * Signs in through the tests' client (kit/tenant-client.ts over HTTP; the Subscription-Key goes with
 * the token request too) and keeps only the headers: the benchmarks send with their own clients.
 */
export async function signIn(baseUrl: string, created: CreatedTenant): Promise<ServiceTenant> {
  const client = await tenantClient(httpTransport(baseUrl), created, {
    subscriptionKey: created.subscriptionKey,
  });
  return { name: created.tenant, headers: client.headers };
}

/** Creates a tenant, starts the server, signs in: the tenant the benchmark writes as, with its headers. */
export async function serviceTenant(context: ServiceContext): Promise<ServiceTenant> {
  const created = await createTenant(context.env, context.cli);
  const baseUrl = await context.start();
  return signIn(baseUrl, created);
}
