import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { tenantClient } from '../../kit/tenant-client.js';
import { FORM, tokenForm } from '../../kit/token.js';
import { httpTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { LOCK_FILE, lockDataDir } from '../../src/db/data-dir-lock.js';
import { migrate } from '../../src/db/migrate.js';
import { openDatabase } from '../../src/db/open.js';
import { openPostgres } from '../../src/db/postgres.js';
import { testAuthConfig } from '../helpers/app.js';
import { type ChildOutput, outputOf } from '../helpers/child-output.js';
import { startFirstServe } from '../helpers/first-start.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'src', 'cli.ts');

/** The test's environment with these changes; no DATABASE_URL unless given (embedded PGlite). */
function environment(changes: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: undefined, LOG_LEVEL: 'silent', ...changes };
  for (const name of Object.keys(env)) if (env[name] === undefined) delete env[name];
  return env;
}

function start(args: string[], env: Record<string, string | undefined>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: environment(env) });
}

function run(args: string[], env: Record<string, string | undefined> = {}): Promise<ChildOutput> {
  return outputOf(start(args, env));
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A failure: exit code 1, nothing on stdout, one line on stderr. */
function assertFailure(result: ChildOutput, reason: RegExp): void {
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /^sfa-backoffice: [^\n]+\n$/);
  assert.match(result.stderr, reason);
}

/** Status of a product upload with these credentials, through inject. */
async function uploadStatus(app: FastifyInstance, key: string, clientId: string, clientSecret: string) {
  const token = await app.inject({
    method: 'POST',
    url: '/token',
    headers: { 'content-type': FORM },
    payload: tokenForm({ clientId, clientSecret }),
  });
  if (token.statusCode !== 200) return token.statusCode;
  const batch = await app.inject({
    method: 'POST',
    url: '/api/products/batch-create',
    headers: {
      'content-type': 'application/json',
      'subscription-key': key,
      authorization: `Bearer ${token.json().access_token}`,
    },
    payload: JSON.stringify([{ code: `P-${Date.now()}`, description: 'from the CLI test' }]),
  });
  return batch.statusCode;
}

const CREATE_FIELDS = ['clientId', 'clientSecret', 'subscriptionKey', 'tenant'];

describe('sfa-backoffice command', () => {
  test('--help works on every command', async () => {
    const commands = [
      [],
      ['tenant'],
      ['tenant', 'create'],
      ['tenant', 'list'],
      ['key'],
      ['key', 'add'],
      ['key', 'list'],
      ['key', 'revoke'],
      ['client'],
      ['client', 'add'],
      ['client', 'list'],
      ['client', 'revoke'],
      ['seed-demo'],
      ['migrate'],
      ['serve'],
    ];
    const results = await Promise.all(commands.map((command) => run([...command, '--help'])));
    for (const [n, result] of results.entries()) {
      const command = ['sfa-backoffice', ...commands[n]!].join(' ');
      assert.equal(result.code, 0, command);
      assert.ok(result.stdout.startsWith(`Usage: ${command} `), `${command}: ${result.stdout}`);
    }
  });

  test('tenant create --json prints one JSON object; the credentials work; the commands manage them', async () => {
    const dir = tempDir();
    const env = { DATA_DIR: dir };
    const created = await run(['tenant', 'create', '--name', 'acme', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, '');
    assert.match(created.stdout, /^\{[^\n]*\}\n$/);
    const acme = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(acme).sort(), CREATE_FIELDS);
    assert.equal(acme.tenant, 'acme');

    assertFailure(
      await run(['tenant', 'create', '--name', 'acme', '--json'], env),
      /tenant "acme" already exists/,
    );
    assertFailure(await run(['tenant', 'create', '--json'], env), /--name/);
    assertFailure(await run(['key', 'add', '--tenant', 'nobody'], env), /no tenant named "nobody"/);
    assertFailure(
      await run(['key', 'revoke', '--tenant', 'acme', '--key-id', 'sk_0000000000000000'], env),
      /has no subscription key sk_0000000000000000/,
    );

    const key = await run(['key', 'add', '--tenant', 'acme', '--json'], env);
    const client = await run(['client', 'add', '--tenant', 'acme', '--json'], env);
    const added = { ...JSON.parse(key.stdout), ...JSON.parse(client.stdout) };
    assert.deepEqual(Object.keys(added).sort(), [
      'clientId',
      'clientSecret',
      'keyId',
      'subscriptionKey',
      'tenant',
    ]);
    const firstKeyId = acme.subscriptionKey.split('.')[0];
    const revokedKey = await run(['key', 'revoke', '--tenant', 'acme', '--key-id', firstKeyId], env);
    assert.equal(revokedKey.code, 0, revokedKey.stderr);
    assert.equal(revokedKey.stdout, `revoked subscription key ${firstKeyId}\n`);
    const revokedClient = await run(
      ['client', 'revoke', '--tenant', 'acme', '--client-id', acme.clientId],
      env,
    );
    assert.equal(revokedClient.code, 0, revokedClient.stderr);
    const keys = JSON.parse((await run(['key', 'list', '--tenant', 'acme', '--json'], env)).stdout);
    assert.deepEqual(
      keys.map((k: { id: string; revokedAt: string | null }) => [k.id, k.revokedAt === null]).sort(),
      [
        [firstKeyId, false],
        [added.keyId, true],
      ].sort(),
    );
    const tenants = await run(['tenant', 'list'], env);
    assert.match(tenants.stdout, /^acme {2}created \S+ {2}keys 1 {2}clients 1\n$/);

    // PGlite is one process at a time: the commands have exited and released the directory.
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
    const db = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolSize: 1 });
    try {
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      try {
        assert.equal(await uploadStatus(app, added.subscriptionKey, added.clientId, added.clientSecret), 201);
        assert.equal(await uploadStatus(app, acme.subscriptionKey, added.clientId, added.clientSecret), 401);
        assert.equal(await uploadStatus(app, added.subscriptionKey, acme.clientId, acme.clientSecret), 400);
      } finally {
        await app.close();
      }
    } finally {
      await db.close();
    }
  });

  test('the data directory lock refuses a second holder and takes over a stale one', async () => {
    const dir = tempDir();
    const env = { DATA_DIR: dir };
    const release = lockDataDir(dir);
    try {
      assertFailure(await run(['tenant', 'list'], env), new RegExp(`in use by process ${process.pid}`));
      assertFailure(await run(['serve'], { ...env, PORT: '0' }), /in use by process/);
    } finally {
      release();
    }
    // The lock of a process that has ended is stale.
    const ended = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid!));
    });
    writeFileSync(join(dir, LOCK_FILE), `${ended}\n`);
    const listed = await run(['tenant', 'list'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout, 'no tenants\n');
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);

    // Our own pid in a lock we do not hold is a previous run's (a container restarted with the same pid).
    writeFileSync(join(dir, LOCK_FILE), `${process.pid}\n`);
    const ours = lockDataDir(dir);
    try {
      assert.throws(() => lockDataDir(dir), /in use by process/);
    } finally {
      ours();
    }
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  });

  test('invalid settings end with one line and exit code 1', async () => {
    assertFailure(await run(['serve'], { PORT: 'abc' }), /PORT must be a whole number/);
    assertFailure(
      await run(['migrate'], { DATABASE_URL: 'mysql://x' }),
      /DATABASE_URL must start with postgres/,
    );
    assertFailure(await run(['nonsense']), /unknown command 'nonsense'/);
  });

  test('first start on an empty embedded database: a demo tenant, its credentials printed once', async () => {
    const server = await startFirstServe({ LOG_LEVEL: 'info' });
    const dir = server.dataDir;
    const [key, clientId, clientSecret, base, docs] = [
      'subscription key',
      'client id',
      'client secret',
      'base URL',
      'docs',
    ].map((label) => server.printed(label)) as [string, string, string, string, string];
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(docs, `${base}/docs`);
    assert.match(server.stdout(), new RegExp(`curl -s -X POST ${base}/token .*client_id=${clientId}`));

    // The printed credentials work: a token (sent with the key, as the printed curl does), then a batch.
    const printed = { subscriptionKey: key, clientId, clientSecret };
    const demo = await tenantClient(httpTransport(base), printed, { subscriptionKey: key });
    // CAFE-500 is a product of the demo data.
    const batch = await demo.post('/api/stocks/batch-create', [
      { product_code: 'CAFE-500', location: 'CLI-01', quantity: 3 },
    ]);
    assert.equal(batch.status, 201, batch.text);

    // A running server holds the directory: commands are refused.
    assertFailure(await run(['tenant', 'list'], { DATA_DIR: dir }), /in use by process/);

    assert.equal(await server.stop(), 0);
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
    const stdout = server.stdout();
    // The log never carries a credential (only the welcome text shows them, once).
    const logLines = stdout.split('\n').filter((line) => line.startsWith('{'));
    assert.ok(logLines.length > 3);
    for (const secret of [key, clientSecret, demo.accessToken]) {
      assert.ok(!logLines.some((line) => line.includes(secret)), 'a credential reached the log');
    }
    assert.equal(
      stdout.split(clientSecret).length,
      3,
      'the secret is shown in the list and the curl line only',
    );

    // The second start finds a tenant: nothing is created, nothing printed.
    const again = start(['serve'], { DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    let output = '';
    again.stdout!.on('data', (chunk) => {
      output += chunk;
    });
    const againExited = new Promise<number | null>((resolve) => again.on('exit', (code) => resolve(code)));
    after(() => again.kill('SIGKILL'));
    const deadline = Date.now() + 60_000;
    while (!output.includes('Server listening')) {
      assert.ok(Date.now() < deadline, `second start did not listen: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    again.kill('SIGTERM');
    assert.equal(await againExited, 0);
    assert.ok(!output.includes('client secret'));
  });

  const url = process.env.TEST_DATABASE_URL;
  test('tenant create --json on PostgreSQL', {
    skip: url ? false : 'TEST_DATABASE_URL not set',
  }, async () => {
    const name = `cli-${crypto.randomUUID()}`;
    const created = await run(['tenant', 'create', '--name', name, '--json'], { DATABASE_URL: url });
    assert.equal(created.code, 0, created.stderr);
    const tenant = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(tenant).sort(), CREATE_FIELDS);
    const db = openPostgres({ connectionString: url!, poolSize: 2 });
    try {
      await migrate(db);
      const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
      try {
        assert.equal(
          await uploadStatus(app, tenant.subscriptionKey, tenant.clientId, tenant.clientSecret),
          201,
        );
      } finally {
        await app.close();
      }
    } finally {
      await db.close();
    }
  });
});
