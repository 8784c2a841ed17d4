import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { freePort } from '../../kit/free-port.js';
import { type Pgbouncer, startPgbouncer } from '../../kit/pgbouncer.js';
import { adminStatement, scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ConnectionUrlError, parseConnectionTargets } from '../../src/db/connection-url.js';
import { isConnectionError } from '../../src/db/failures.js';
import { openPostgres } from '../../src/db/postgres.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../src/http/problems.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';

/*
 * DATABASE_URL in libpq's multi-host form (decision 0144): what is read and what is refused, and on
 * PostgreSQL a pool that passes over a host that is gone or read-only, and follows the writable host
 * when it changes, without a restart. One server plays several hosts: PgBouncer logging in as a role
 * of its own is a host whose sessions are read-only once that role's are.
 */

const serverUrl = process.env.TEST_DATABASE_URL;
const quiet = { PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '100000' };

/** What pg itself reads from one host's connection string. */
function pgReads(connectionString: string) {
  const client = new pg.Client({ connectionString });
  return {
    host: client.host,
    port: client.port,
    user: client.user,
    password: client.password,
    database: client.database,
  };
}

function refused(url: string, pattern: RegExp): void {
  assert.throws(
    () => parseConnectionTargets(url),
    (error: unknown) => {
      assert.ok(error instanceof ConnectionUrlError, String(error));
      assert.match(error.message, pattern);
      return true;
    },
  );
}

describe('DATABASE_URL in the multi-host form', () => {
  test('one host without target_session_attrs is left to pg, as before', () => {
    for (const url of [
      'postgres://u:p@h:5432/db',
      'postgresql://h/db?sslmode=require&application_name=x',
      'postgres:///db?host=/var/run/postgresql',
      'postgres://h/db?target_session_attrs=any',
      'postgres://[::1]:5433/db',
    ]) {
      assert.equal(parseConnectionTargets(url), undefined, url);
    }
  });

  test('hosts in order, ports given or 5432, the rest of the URL kept for each host', () => {
    const targets = parseConnectionTargets(
      'postgres://us%40er:p%2Fw@h1:5433,h2/my_db?target_session_attrs=read-write&application_name=app&sslmode=disable',
    )!;
    assert.equal(targets.targetSessionAttrs, 'read-write');
    assert.deepEqual(
      targets.hosts.map(({ host, port }) => `${host}:${port}`),
      ['h1:5433', 'h2:5432'],
    );
    for (const [n, host] of targets.hosts.entries()) {
      assert.deepEqual(pgReads(host.connectionString), {
        host: ['h1', 'h2'][n],
        port: [5433, 5432][n],
        user: 'us@er',
        password: 'p/w',
        database: 'my_db',
      });
      const params = new URL(host.connectionString).searchParams;
      assert.equal(params.get('application_name'), 'app');
      assert.equal(params.get('sslmode'), 'disable');
      assert.equal(params.get('target_session_attrs'), null, 'read here, not passed to pg');
    }
  });

  test('IPv6 in brackets, Unix socket directories percent-encoded', () => {
    const targets = parseConnectionTargets('postgres://u@[::1]:5433,[2001:db8::7],%2Ftmp%2Fpg:6432/db')!;
    assert.deepEqual(
      targets.hosts.map((host) => pgReads(host.connectionString)).map(({ host, port }) => [host, port]),
      [
        ['::1', 5433],
        ['2001:db8::7', 5432],
        ['/tmp/pg', 6432],
      ],
    );
    assert.equal(targets.targetSessionAttrs, 'any');
  });

  test('host= and port= parameters, as libpq reads them', () => {
    const listed = (url: string) =>
      parseConnectionTargets(url)!.hosts.map(({ host, port }) => `${host}:${port}`);
    // One port for every host.
    assert.deepEqual(listed('postgres://u@/db?host=h1,h2&port=6000'), ['h1:6000', 'h2:6000']);
    assert.deepEqual(listed('postgres:///db?host=h1,h2&port=6000,6001'), ['h1:6000', 'h2:6001']);
    // A parameter replaces the URL's own list.
    assert.deepEqual(listed('postgres://a:1,b:2/db?host=c,d'), ['c:1', 'd:2']);
    assert.deepEqual(listed('postgres://a:1,b:2/db?port=7'), ['a:7', 'b:7']);
    // One host with target_session_attrs: checked as well.
    assert.deepEqual(listed('postgres://h/db?target_session_attrs=primary'), ['h:5432']);
  });

  test('connect_timeout is per host, at least 2 s, none at 0', () => {
    const timeout = (value: string) =>
      parseConnectionTargets(`postgres://a,b/db?connect_timeout=${value}`)!.connectTimeoutMs;
    assert.equal(timeout('10'), 10_000);
    assert.equal(timeout('1'), 2_000);
    assert.equal(timeout('0'), undefined);
    assert.equal(parseConnectionTargets('postgres://a,b/db')!.connectTimeoutMs, undefined);
  });

  test('what is refused, and why', () => {
    refused(
      'postgres://a,b/db?target_session_attrs=standby',
      /target_session_attrs=standby .*take no writes/,
    );
    refused('postgres://a,b/db?target_session_attrs=read-only', /target_session_attrs=read-only/);
    refused('postgres://a/db?target_session_attrs=prefer-standby', /target_session_attrs=prefer-standby/);
    refused('postgres://a/db?target_session_attrs=master', /target_session_attrs=master .*no such value/);
    refused('postgres://a,b/db?load_balance_hosts=random', /load_balance_hosts=random/);
    refused('postgres://a,b,c/db?port=1,2', /2 ports for 3 hosts/);
    refused('postgres://a,,b/db', /empty host/);
    refused('postgres://a:x,b/db', /port that is not a number from 1 to 65535/);
    refused('postgres://a:70000,b/db', /port that is not a number from 1 to 65535/);
    refused('postgres://::1:5432,b/db', /IPv6 address goes in brackets/);
    refused('postgres://[::1,b/db', /malformed IPv6/);
    // A password with an unencoded "/" reads in part as a port: never quoted back.
    assert.throws(
      () => parseConnectionTargets('postgres://u:pa/ssword@h1,h2/db?target_session_attrs=read-write'),
      (error: Error) => !error.message.includes('pa'),
    );
    refused('postgres://a%zz,b/db', /percent-encoding/);
    refused('postgres://a,b/db?hostaddr=10.0.0.1,10.0.0.2', /hostaddr/);
    refused('postgres://a,b/db?connect_timeout=soon', /connect_timeout "soon"/);
    refused('mysql://a,b/db', /postgres:\/\//);
  });

  test('the configuration refuses at startup what the pool could not use', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://a:5432,b:5433/db?target_session_attrs=standby' }),
      (error: unknown) => error instanceof ConfigError && /target_session_attrs=standby/.test(error.message),
    );
    assert.equal(
      loadConfig({ DATABASE_URL: 'postgres://a:5432,b:5433/db?target_session_attrs=read-write' }).databaseUrl,
      'postgres://a:5432,b:5433/db?target_session_attrs=read-write',
    );
  });
});

async function admin(sql: string): Promise<void> {
  await adminStatement(serverUrl!, sql);
}

/** A superuser role of its own: what PgBouncer logs in as makes a host differ from the others. */
async function role(): Promise<string> {
  const name = `sfa_mh_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE ROLE ${name} SUPERUSER LOGIN`);
  return name;
}

/** Sessions of the role read-only from now on (or again writable): its open ones are ended. */
async function readOnly(name: string, on: boolean): Promise<void> {
  await admin(
    on
      ? `ALTER ROLE ${name} SET default_transaction_read_only = on`
      : `ALTER ROLE ${name} RESET default_transaction_read_only`,
  );
  await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${name}'`);
}

/** The URL of database with hosts ("host:port"), the user and password of the test server's URL. */
function multiHostUrl(database: string, hosts: string[], query = ''): string {
  const server = new URL(serverUrl!);
  const userinfo = `${server.username}${server.password ? `:${server.password}` : ''}@`;
  return `postgres://${userinfo}${hosts.join(',')}/${database}${query}`;
}

const address = (url: string) => new URL(url).host;
const readiness = (server: RunningServer) => httpTransport(server.url).send({ path: '/ready' });
const products = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, at) => ({ code: `${prefix}${at}`, description: 'multi-host' }));

describe('a multi-host DATABASE_URL on PostgreSQL', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL',
}, () => {
  test('a first host that is gone is passed over: the service reads and writes through the second', async () => {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    after(() => scratch.drop());
    const gone = `127.0.0.1:${await freePort()}`;
    const url = multiHostUrl(scratch.name, [gone, address(scratch.url)]);
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: url, DB_POOL_SIZE: '4' }));
    after(() => server.close());
    const tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'multi-host'));
    for (let n = 0; n < 4; n++) {
      const write = await tenant.post('/api/products/batch-create', products(`G${n}-`, 10));
      assert.equal(write.status, 201, write.text);
    }
    assert.equal((await tenant.get('/v1/customers?limit=5')).status, 200);
    assert.equal((await readiness(server)).status, 200);
    const [count] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM products');
    assert.equal(count!.n, 40);
  });

  test('a first host that never answers is given its share of the connection timeout, not all of it', async () => {
    // Accepts connections and never says a word: a server that hangs, or a link that drops packets.
    const silent = createServer(() => {});
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    after(() => {
      silent.close();
    });
    const held = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const db = openPostgres({
      connectionString: multiHostUrl(new URL(serverUrl!).pathname.slice(1), [held, address(serverUrl!)]),
      poolSize: 1,
      acquireTimeoutMs: 2_000,
    });
    after(() => db.close());
    assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
  });

  test('every host refusing the same way keeps that code: an unknown role is no "come back"', async () => {
    const here = address(serverUrl!);
    const db = openPostgres({
      connectionString: `postgres://no_such_role_${randomBytes(4).toString('hex')}@${here},${here}/postgres`,
      poolSize: 1,
    });
    after(() => db.close());
    await assert.rejects(db.query('SELECT 1'), (error: Error & { code?: string }) => {
      assert.equal(error.code, '28000', error.message);
      assert.ok(!isConnectionError(error), error.message);
      return true;
    });
  });

  test('a read-only first host is passed over with read-write, kept with any and primary', async () => {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    const readOnlyRole = await role();
    await readOnly(readOnlyRole, true);
    const bouncer = await startPgbouncer(serverUrl!, { serverUser: readOnlyRole });
    after(async () => {
      await bouncer.stop();
      await scratch.drop();
      await admin(`DROP ROLE IF EXISTS ${readOnlyRole}`);
    });
    const hosts = [address(bouncer.url(scratch.url)), address(scratch.url)];

    const server = await startServer(
      loadConfig({
        ...quiet,
        DATABASE_URL: multiHostUrl(scratch.name, hosts, '?target_session_attrs=read-write'),
        DB_POOL_SIZE: '4',
      }),
    );
    after(() => server.close());
    const tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'read-write'));
    const writes = await Promise.all(
      Array.from({ length: 6 }, (_, n) => tenant.post('/api/products/batch-create', products(`W${n}-`, 10))),
    );
    assert.deepEqual(
      writes.map((write) => write.status),
      [201, 201, 201, 201, 201, 201],
    );
    assert.equal((await readiness(server)).status, 200);
    // Every connection of the pool is the second host's (the server reached as the URL's user).
    const users = await Promise.all(
      Array.from({ length: 4 }, () => server.db.query<{ user: string }>('SELECT current_user AS user')),
    );
    assert.deepEqual(new Set(users.map(([row]) => row!.user)), new Set([new URL(serverUrl!).username]));

    // any keeps the first host that connects; primary the first not in recovery, read-only or not.
    for (const attrs of ['any', 'primary']) {
      const db = openPostgres({
        connectionString: multiHostUrl(scratch.name, hosts, `?target_session_attrs=${attrs}`),
        poolSize: 1,
      });
      try {
        assert.deepEqual(await db.query('SELECT current_user AS user'), [{ user: readOnlyRole }], attrs);
      } finally {
        await db.close();
      }
    }

    // No host qualifies, one is up: it stands in (decision 0147). Reads answer from it, a write is
    // refused as the server refuses it (25006, a come-back answer), and the stand-in is ended once
    // past its life: the next statement walks the hosts again.
    const gone = `127.0.0.1:${await freePort()}`;
    const standIn = openPostgres({
      connectionString: multiHostUrl(scratch.name, [gone, hosts[0]!], '?target_session_attrs=read-write'),
      poolSize: 1,
      standInLifeMs: 0,
    });
    after(() => standIn.close());
    assert.deepEqual(await standIn.query('SELECT current_user AS user'), [{ user: readOnlyRole }]);
    assert.equal(standIn.poolStats().total, 0, 'a stand-in past its life is not kept');
    await assert.rejects(
      standIn.query('CREATE TABLE stand_in_write (n int)'),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, '25006');
        assert.ok(isConnectionError(error));
        return true;
      },
    );

    // A stand-in within its life is used again; one left idle past it is ended when next taken.
    const kept = openPostgres({
      connectionString: multiHostUrl(scratch.name, [gone, hosts[0]!], '?target_session_attrs=read-write'),
      poolSize: 1,
      standInLifeMs: 300,
    });
    after(() => kept.close());
    // Which connection serves a transaction: its client port as PgBouncer lists it while the
    // transaction holds it (the server's backend is PgBouncer's to share: pg_backend_pid cannot tell).
    const adminUrl = bouncer.url(serverUrl!.replace(/\/[^/?]*(\?|$)/, '/pgbouncer$1'));
    const connection = () =>
      kept.transaction(async (tx) => {
        await tx.query('SELECT 1');
        const admin = new pg.Client({ connectionString: adminUrl });
        await admin.connect();
        try {
          const { rows } = await admin.query('SHOW CLIENTS');
          return JSON.stringify(rows.filter((row) => row.database === scratch.name).map((row) => row.port));
        } finally {
          await admin.end();
        }
      });
    const first = await connection();
    assert.equal(await connection(), first, 'the same stand-in within its life');
    await new Promise((done) => setTimeout(done, 400));
    assert.notEqual(await connection(), first, 'past its life, a new connection');

    // No host up: a connection error that names each host and why it was passed over (both refused
    // the same way: that code, as one host's would be).
    const goneToo = `127.0.0.1:${await freePort()}`;
    const none = openPostgres({
      connectionString: multiHostUrl(scratch.name, [gone, goneToo], '?target_session_attrs=read-write'),
      poolSize: 1,
    });
    after(() => none.close());
    await assert.rejects(none.query('SELECT 1'), (error: Error & { code?: string }) => {
      assert.ok(isConnectionError(error), error.message);
      assert.equal(error.code, 'ECONNREFUSED');
      assert.match(error.message, new RegExp(`${gone} .*ECONNREFUSED.*; ${goneToo} .*ECONNREFUSED`));
      return true;
    });
  });

  test('the pool follows the writable host as it moves, without a restart', async () => {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    const roles = [await role(), await role()];
    const bouncers: Pgbouncer[] = [];
    after(async () => {
      await Promise.all(bouncers.map((bouncer) => bouncer.stop()));
      await scratch.drop();
      for (const name of roles) await admin(`DROP ROLE IF EXISTS ${name}`);
    });
    for (const name of roles) bouncers.push(await startPgbouncer(serverUrl!, { serverUser: name }));
    const url = multiHostUrl(
      scratch.name,
      bouncers.map((bouncer) => address(bouncer.url(scratch.url))),
      '?target_session_attrs=read-write',
    );
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: url, DB_POOL_SIZE: '4' }));
    after(() => server.close());
    const tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'moving'));
    const host = async () =>
      (await server.db.query<{ user: string }>('SELECT current_user AS user'))[0]!.user;
    let batch = 0;
    let landed = 0;
    const write = async () => {
      const answer = await tenant.post('/api/products/batch-create', products(`M${batch++}-`, 5));
      if (answer.status === 201) landed++;
      return answer;
    };

    /**
     * Writes until one lands: each connection opened before the move fails once, with the come-back
     * answer, and is replaced by one to the writable host. Bounded by the pool's size, and then every
     * write lands.
     */
    const writesLand = async () => {
      let refusedWrites = 0;
      for (let answer = await write(); answer.status !== 201; answer = await write()) {
        assert.equal(answer.status, 500, answer.text);
        assert.equal(answer.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
        refusedWrites++;
        assert.ok(refusedWrites <= 6, 'the stale connections are replaced');
      }
      for (let n = 0; n < 5; n++) assert.equal((await write()).status, 201);
    };

    // Both hosts take writes: the first is used.
    await writesLand();
    assert.equal(await host(), roles[0]);

    // The first becomes read-only (a switchover): writes go on through the second.
    await readOnly(roles[0]!, true);
    await writesLand();
    assert.equal(await host(), roles[1]);
    assert.equal((await readiness(server)).status, 200);

    // Neither takes writes: the come-back answers of decision 0143.
    await readOnly(roles[1]!, true);
    let stale = 0;
    for (let answer = await write(); answer.status === 201; answer = await write()) {
      assert.ok(++stale <= 6, 'writes stop landing once no host takes them');
    }
    for (let n = 0; n < 3; n++) {
      const refusedWrite = await write();
      assert.equal(refusedWrite.status, 500, refusedWrite.text);
      assert.match(refusedWrite.body.errors[0].message, /^Error connecting to database: /);
      assert.equal(refusedWrite.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
    }
    const acknowledged = await tenant.post('/v1/deliveries/acknowledge', ['D-none']);
    assert.equal(acknowledged.status, 503, acknowledged.text);
    assert.equal(acknowledged.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
    assert.equal((await readiness(server)).status, 503);
    // Reads that need no write keep answering, from the first host standing in (decision 0147); the
    // rate limit counts them in the instance while its shared count cannot be written.
    for (const path of [
      '/v1/deliveries/pending?limit=1',
      '/v1/customers?limit=1',
      '/v1/changes?resource=products&limit=1',
    ]) {
      const read = await tenant.get(path);
      assert.equal(read.status, 200, `${path}: ${read.text}`);
    }

    // The first takes writes again: the pool goes back to it, in order.
    await readOnly(roles[0]!, false);
    await writesLand();
    assert.equal(await host(), roles[0]);
    assert.equal((await readiness(server)).status, 200);
    // Every batch answered 201 is there, and no other wrote anything.
    const [count] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM products');
    assert.equal(count!.n, 5 * landed);
  });
});
