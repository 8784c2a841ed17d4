import { generateCustomers } from '../../src/seed/generate.js';
import { createPgDatabase, postgresCommand, rawPgliteAt, tempDir } from './databases.js';
import { Client } from './load.js';
import { type ChildServer, CLI, serverEnv, startServer } from './server.js';
import { median } from './stats.js';
import { createTenant, signIn } from './tenant.js';

export type Backend = 'postgres' | 'pglite';

/**
 * The first reads after a bulk load through the API: customers uploaded in 10,000-item batches into a
 * fresh database, then GET /v1/customers?limit=100 at once. Compared with the same request once the
 * database has analysed the table by itself (what autovacuum does on PostgreSQL, eventually; never on
 * PGlite): a read planned without statistics took 40x longer before the service kept them current.
 */
export interface FirstRead {
  backend: Backend;
  customers: number;
  /** The first request after the last batch was answered, ms. */
  first: number;
  /** p50 of the next requests, still before any outside analysis. */
  next: number;
  /** p50 of the same request after ANALYZE run outside the service. */
  analysed: number;
}

const PATH = '/v1/customers?limit=100';
const BATCH = 10_000;
const SAMPLES = 20;

async function timedGets(client: Client, headers: Record<string, string>, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let n = 0; n < count; n++) {
    const started = performance.now();
    const response = await client.request('GET', PATH, headers);
    if (response.status !== 200) throw new Error(`GET ${PATH}: HTTP ${response.status}`);
    times.push(performance.now() - started);
  }
  return times;
}

export async function measureFirstRead(backend: Backend, customers: number): Promise<FirstRead> {
  const env = serverEnv();
  let dataDir: string | undefined;
  if (backend === 'postgres') env.DATABASE_URL = await createPgDatabase();
  else env.DATA_DIR = dataDir = tempDir('sfa-bench-first-read-');
  const created = await createTenant(env, CLI);
  let server: ChildServer = await startServer(env);
  let tenant = await signIn(server.baseUrl, created);
  let client = new Client(server.baseUrl, 1);
  for (let from = 0; from < customers; from += BATCH) {
    const body = Buffer.from(JSON.stringify(generateCustomers({ from, count: BATCH, seed: 11 })));
    const response = await client.request(
      'POST',
      '/api/customers/batch-create',
      {
        ...tenant.headers,
        'content-type': 'application/json',
      },
      body,
    );
    if (response.status !== 201) throw new Error(`batch: HTTP ${response.status} ${response.body}`);
  }
  const [first, ...next] = await timedGets(client, tenant.headers, 1 + SAMPLES);

  // The table analysed from outside, as autovacuum would (PostgreSQL) or an operator must (PGlite).
  if (backend === 'postgres') {
    await postgresCommand(env.DATABASE_URL!, 'ANALYZE customers');
  } else {
    client.close();
    await server.stop();
    const raw = await rawPgliteAt(dataDir!);
    await raw.query('VACUUM (ANALYZE) customers');
    await raw.close();
    server = await startServer(env);
    tenant = await signIn(server.baseUrl, created);
    client = new Client(server.baseUrl, 1);
    await timedGets(client, tenant.headers, 3);
  }
  const analysed = await timedGets(client, tenant.headers, SAMPLES);
  client.close();
  await server.stop();
  return { backend, customers, first: first!, next: median(next), analysed: median(analysed) };
}

/** Rows of the table: the reads right after the load (their p50 is the ratio's) against the same read once analysed. */
export function firstReadLines(results: readonly FirstRead[]): [string, string, string, string][] {
  return results.map((r) => [
    `GET ${PATH} right after ${r.customers.toLocaleString('en-US')} customers uploaded (${r.backend})`,
    `first ${r.first.toFixed(1)} ms, next p50 ${r.next.toFixed(1)} ms`,
    `p50 ${r.analysed.toFixed(1)} ms`,
    `${(r.next / r.analysed).toFixed(2)}x`,
  ]);
}
