import { Command, InvalidArgumentError } from 'commander';
import type { Database } from './db/database.js';
import type { RunningServer } from './server.js';
import type { CredentialInfo, RevokeResult } from './sql/credentials.js';
import type { NewTenant } from './tenants/tenants.js';
import { registerUploadCommands } from './upload/register.js';
import { VERSION } from './version.js';

/**
 * The sfa-backoffice command: a thin layer over the library functions. Settings come from the
 * environment, as for the server. Every failure ends with exit code 1 and one line on stderr (the
 * upload and jobs commands have exit statuses of their own, extensions.md 15).
 *
 * The server's modules are imported by the action that needs them, not at the start: the upload
 * command, a client of the HTTP API, then runs without the server's code loaded (its memory bar,
 * docs/decisions/0136-upload-client-runs-light.md).
 */
const program = new Command('sfa-backoffice')
  .description('Back-office API for sales-force and delivery-management platforms')
  .version(VERSION, '-V, --version', 'print the version')
  // Commander's own usage errors in the same one-line form as ours.
  .configureOutput({ outputError: (text, write) => write(`sfa-backoffice: ${text.replace(/^error: /, '')}`) })
  .addHelpText(
    'after',
    '\nSettings come from the environment: DATABASE_URL (PostgreSQL) or DATA_DIR (embedded, default ./data),\n' +
      'PORT, HOST, LOG_LEVEL, TOKEN_SECRET, TOKEN_TTL_SECONDS, DB_POOL_SIZE, RATE_LIMIT_PER_MINUTE,\n' +
      'METRICS_PORT, METRICS_HOST, TRUST_PROXY.',
  );

/** Runs work on the database of the settings, its schema brought up to date first. */
async function withDatabase<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openDatabase }, { migrate }] = await Promise.all([
    import('./config.js'),
    import('./db/open.js'),
    import('./db/migrate.js'),
  ]);
  const db = await openDatabase(loadConfig());
  try {
    await migrate(db);
    return await work(db);
  } finally {
    await db.close();
  }
}

const print = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

function printCredentials(fields: Array<[string, string]>): void {
  for (const [label, value] of fields) print(`  ${label.padEnd(18)}${value}`);
}

function printList(items: readonly CredentialInfo[], json: boolean): void {
  if (json) {
    print(JSON.stringify(items));
    return;
  }
  for (const item of items) {
    print(
      `${item.id}  created ${item.createdAt}${item.revokedAt ? `  revoked ${item.revokedAt}` : '  active'}`,
    );
  }
}

function reportRevoke(result: RevokeResult, what: string, tenant: string): void {
  if (result === 'not-found') throw new Error(`tenant "${tenant}" has no ${what}`);
  print(result === 'revoked' ? `revoked ${what}` : `${what} was already revoked`);
}

const tenant = program.command('tenant').description('create and list tenants');

tenant
  .command('create')
  .description('create a tenant with one subscription key and one API client, shown once')
  .requiredOption('--name <name>', 'tenant name (unique)')
  .option('--json', 'print one JSON object: {tenant, subscriptionKey, clientId, clientSecret}')
  .action(async (options: { name: string; json?: boolean }) => {
    const { createTenant } = await import('./tenants/tenants.js');
    const created: NewTenant = await withDatabase((db) => createTenant(db, options.name));
    if (options.json) {
      const { tenant, subscriptionKey, clientId, clientSecret } = created;
      print(JSON.stringify({ tenant, subscriptionKey, clientId, clientSecret }));
      return;
    }
    print(`Created tenant "${created.tenant}". Keep these now: they are not shown again.`);
    printCredentials([
      ['subscription key', created.subscriptionKey],
      ['client id', created.clientId],
      ['client secret', created.clientSecret],
    ]);
  });

tenant
  .command('list')
  .description('list tenants with their numbers of active keys and clients')
  .option('--json', 'print a JSON array')
  .action(async (options: { json?: boolean }) => {
    const { listTenants } = await import('./sql/tenants.js');
    const tenants = await withDatabase(listTenants);
    if (options.json) {
      print(JSON.stringify(tenants));
      return;
    }
    if (tenants.length === 0) {
      print('no tenants');
      return;
    }
    for (const t of tenants) {
      print(`${t.name}  created ${t.createdAt}  keys ${t.activeKeys}  clients ${t.activeClients}`);
    }
  });

const key = program.command('key').description("add, list and revoke a tenant's subscription keys");

key
  .command('add')
  .description('add a subscription key, shown once')
  .requiredOption('--tenant <name>', 'tenant name')
  .option('--json', 'print one JSON object: {tenant, keyId, subscriptionKey}')
  .action(async (options: { tenant: string; json?: boolean }) => {
    const [{ addSubscriptionKey }, { tenantIdByName }] = await Promise.all([
      import('./auth/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const added = await withDatabase(async (db) =>
      addSubscriptionKey(db, await tenantIdByName(db, options.tenant)),
    );
    if (options.json) {
      print(JSON.stringify({ tenant: options.tenant, ...added }));
      return;
    }
    print(`Added a subscription key to tenant "${options.tenant}". Keep it now: it is not shown again.`);
    printCredentials([
      ['key id', added.keyId],
      ['subscription key', added.subscriptionKey],
    ]);
  });

key
  .command('list')
  .description('list subscription key ids (never the keys)')
  .requiredOption('--tenant <name>', 'tenant name')
  .option('--json', 'print a JSON array')
  .action(async (options: { tenant: string; json?: boolean }) => {
    const [{ listSubscriptionKeys }, { tenantIdByName }] = await Promise.all([
      import('./sql/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const keys = await withDatabase(async (db) =>
      listSubscriptionKeys(db, await tenantIdByName(db, options.tenant)),
    );
    printList(keys, options.json === true);
  });

key
  .command('revoke')
  .description('revoke a subscription key (running servers refuse it within 30 seconds)')
  .requiredOption('--tenant <name>', 'tenant name')
  .requiredOption('--key-id <id>', 'key id (sk_..., the part of the key before the dot)')
  .action(async (options: { tenant: string; keyId: string }) => {
    const [{ revokeSubscriptionKey }, { tenantIdByName }] = await Promise.all([
      import('./sql/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const result = await withDatabase(async (db) =>
      revokeSubscriptionKey(db, await tenantIdByName(db, options.tenant), options.keyId),
    );
    reportRevoke(result, `subscription key ${options.keyId}`, options.tenant);
  });

const client = program.command('client').description("add, list and revoke a tenant's API clients");

client
  .command('add')
  .description('add an API client (client id and secret), shown once')
  .requiredOption('--tenant <name>', 'tenant name')
  .option('--json', 'print one JSON object: {tenant, clientId, clientSecret}')
  .action(async (options: { tenant: string; json?: boolean }) => {
    const [{ addClient }, { tenantIdByName }] = await Promise.all([
      import('./auth/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const added = await withDatabase(async (db) => addClient(db, await tenantIdByName(db, options.tenant)));
    if (options.json) {
      print(JSON.stringify({ tenant: options.tenant, ...added }));
      return;
    }
    print(`Added an API client to tenant "${options.tenant}". Keep the secret now: it is not shown again.`);
    printCredentials([
      ['client id', added.clientId],
      ['client secret', added.clientSecret],
    ]);
  });

client
  .command('list')
  .description('list API client ids (never the secrets)')
  .requiredOption('--tenant <name>', 'tenant name')
  .option('--json', 'print a JSON array')
  .action(async (options: { tenant: string; json?: boolean }) => {
    const [{ listClients }, { tenantIdByName }] = await Promise.all([
      import('./sql/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const clients = await withDatabase(async (db) =>
      listClients(db, await tenantIdByName(db, options.tenant)),
    );
    printList(clients, options.json === true);
  });

client
  .command('revoke')
  .description('revoke an API client: no new tokens, its tokens refused within 30 seconds')
  .requiredOption('--tenant <name>', 'tenant name')
  .requiredOption('--client-id <id>', 'client id (cl_...)')
  .action(async (options: { tenant: string; clientId: string }) => {
    const [{ revokeClient }, { tenantIdByName }] = await Promise.all([
      import('./sql/credentials.js'),
      import('./tenants/tenants.js'),
    ]);
    const result = await withDatabase(async (db) =>
      revokeClient(db, await tenantIdByName(db, options.tenant), options.clientId),
    );
    reportRevoke(result, `API client ${options.clientId}`, options.tenant);
  });

program
  .command('seed-demo')
  .description("load the demo data set (products, stocks, prices, ...) into a tenant's master data")
  .requiredOption('--tenant <name>', 'tenant name')
  .action(async (options: { tenant: string }) => {
    const [{ seedDemoData }, { tenantIdByName }] = await Promise.all([
      import('./demo/seed-demo.js'),
      import('./tenants/tenants.js'),
    ]);
    await withDatabase(async (db) => seedDemoData(db, await tenantIdByName(db, options.tenant)));
    print(`loaded the demo data into tenant "${options.tenant}"`);
  });

/** A whole number option (commander hands over the text). */
function count(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw new InvalidArgumentError('not a whole number');
  return Number(text);
}

program
  .command('seed')
  .description(
    'load generated customers and deliveries with items into a tenant, through the batch pipeline ' +
      '(for benchmarks and trials; the same seed gives the same rows, running it twice adds nothing)',
  )
  .requiredOption('--tenant <name>', 'tenant name')
  .option('--customers <n>', 'customers to load', count, 0)
  .option('--deliveries <n>', 'deliveries to load, not yet acknowledged', count, 0)
  .option('--items-per-delivery <k>', 'item lines per delivery, 0 to 1000', count, 5)
  .option('--seed <n>', 'seed of the generated data set', count, 1)
  .action(
    async (options: {
      tenant: string;
      customers: number;
      deliveries: number;
      itemsPerDelivery: number;
      seed: number;
    }) => {
      const [{ seedTenant }, { tenantIdByName }] = await Promise.all([
        import('./seed/seed.js'),
        import('./tenants/tenants.js'),
      ]);
      const started = Date.now();
      const progress = seedProgress();
      const result = await withDatabase(async (db) =>
        seedTenant(db, await tenantIdByName(db, options.tenant), { ...options, onProgress: progress }),
      );
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      print(
        `seeded tenant "${options.tenant}" in ${seconds} s: customers ${result.customers.created} created, ` +
          `${result.customers.updated} updated; deliveries ${result.deliveries.created} created, ` +
          `${result.deliveries.ignored} already present`,
      );
    },
  );

/** One progress line on stderr: rewritten in place on a terminal, at most every 5 s otherwise. */
function seedProgress() {
  let shown = 0;
  let current = '';
  let phaseStarted = Date.now();
  let previous = phaseStarted;
  return ({ phase, done, total }: { phase: string; done: number; total: number }) => {
    const now = Date.now();
    if (phase !== current) {
      current = phase;
      phaseStarted = previous;
      shown = 0;
    }
    previous = now;
    const last = done === total;
    if (!process.stderr.isTTY && !last && now - shown < 5_000) return;
    shown = now;
    const rate = Math.round(done / Math.max((now - phaseStarted) / 1000, 0.001));
    const line = `seed: ${phase} ${done}/${total} (${Math.floor((done / total) * 100)}%), ${rate}/s`;
    process.stderr.write(process.stderr.isTTY ? `\r${line.padEnd(70)}${last ? '\n' : ''}` : `${line}\n`);
  };
}

program
  .command('migrate')
  .description('bring the database schema up to date')
  .action(async () => {
    const [{ loadConfig }, { openDatabase }, { migrate }, { renumberedText, renumberFeedAfterRestore }] =
      await Promise.all([
        import('./config.js'),
        import('./db/open.js'),
        import('./db/migrate.js'),
        import('./feed/renumbering.js'),
      ]);
    const db = await openDatabase(loadConfig());
    try {
      const { applied } = await migrate(db);
      print(applied.length ? `applied ${applied.join(', ')}` : 'schema is up to date');
      const renumbered = await renumberFeedAfterRestore(db);
      if (renumbered) print(renumberedText(renumbered));
    } finally {
      await db.close();
    }
  });

/** Printed once, at the first start on an empty embedded database: how to make the first call. */
function printDemoWelcome(server: RunningServer): void {
  const demo = server.demo!;
  print();
  print(`Created the tenant "${demo.tenant}" with demo data. Its credentials are shown only this once:`);
  printCredentials([
    ['subscription key', demo.subscriptionKey],
    ['client id', demo.clientId],
    ['client secret', demo.clientSecret],
    ['base URL', server.url],
    ['docs', `${server.url}/docs`],
  ]);
  print('Get an access token:');
  print(
    `  curl -s -X POST ${server.url}/token -H 'Subscription-Key: ${demo.subscriptionKey}'` +
      ` -d grant_type=client_credentials -d client_id=${demo.clientId} -d client_secret=${demo.clientSecret}`,
  );
  print();
}

program
  .command('serve')
  .description('start the HTTP service (settings from the environment: DATABASE_URL, DATA_DIR, PORT, HOST)')
  .action(async () => {
    // Signals are taken from the start: one that arrives while the server starts (its "listening" line
    // is already out) stops it as soon as it runs, instead of killing the process mid-write.
    let server: RunningServer | undefined;
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping || server === undefined) return;
      stopping = true;
      server.app.log.info({ signal }, 'shutting down');
      try {
        await server.close();
      } catch (error) {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      }
      process.exit(0);
    };
    let pending: string | undefined;
    const onSignal = (signal: string) => {
      pending ??= signal;
      void stop(signal);
    };
    // on, not once: a second signal while stopping must not fall through to the default (an abrupt exit).
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
    const [{ loadConfig }, { startServer }] = await Promise.all([
      import('./config.js'),
      import('./server.js'),
    ]);
    server = await startServer(loadConfig());
    if (server.demo) printDemoWelcome(server);
    if (pending) await stop(pending);
  });

registerUploadCommands(program);

program.parseAsync().catch((error: unknown) => {
  // One line, no stack: the reason is for a person at a terminal.
  const reason = error instanceof Error ? error.message : String(error);
  console.error(`sfa-backoffice: ${reason.replace(/\s*\n\s*/g, ' ')}`);
  process.exit(1);
});
