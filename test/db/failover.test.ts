import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { loadConfig } from '../../src/config.js';
import { isConnectionError } from '../../src/db/failures.js';
import { openPostgres } from '../../src/db/postgres.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../src/http/problems.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';

/*
 * PostgreSQL as production runs it: a switchover that leaves the service's address on a read-only
 * server, and several instances sharing a server's connection limit. Both through startServer, the
 * process `sfa-backoffice serve` runs.
 */

const serverUrl = process.env.TEST_DATABASE_URL;
const quiet = { PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '100000' };

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** /ready of the server (no credentials). */
const readiness = (server: RunningServer) => httpTransport(server.url).send({ path: '/ready' });

const products = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, at) => ({ code: `${prefix}${at}`, description: 'failover' }));

describe('PostgreSQL in production topologies', {
  skip: serverUrl ? false : 'needs TEST_DATABASE_URL',
}, () => {
  test('a database that stops taking writes: /ready 503, writes the spec 500, recovery unaided', async () => {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    after(() => scratch.drop());
    const name = new URL(scratch.url).pathname.slice(1);
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: scratch.url, DB_POOL_SIZE: '4' }));
    after(() => server.close());
    const tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'failover'));
    assert.equal((await tenant.post('/api/products/batch-create', products('A', 10))).status, 201);
    assert.equal((await readiness(server)).status, 200);

    // What a client behind the same address sees after a switchover to a standby: sessions ended,
    // new ones read-only.
    await admin(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
    for (let n = 0; n < 3; n++) {
      const ready = await readiness(server);
      assert.equal(ready.status, 503, 'not ready while the database takes no writes');
      assert.equal(ready.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
    }
    for (let n = 0; n < 3; n++) {
      const write = await tenant.post('/api/products/batch-create', products(`B${n}-`, 10));
      assert.equal(write.status, 500);
      assert.match(write.body.errors[0].message, /^Error connecting to database: /);
      assert.equal(write.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS), 'come back');
    }
    // A write of another endpoint: 503, come back.
    const acknowledged = await tenant.post('/v1/deliveries/acknowledge', ['D-none']);
    assert.equal(acknowledged.status, 503, acknowledged.text);
    assert.equal(acknowledged.headers['retry-after'], String(DATABASE_RETRY_AFTER_SECONDS));
    // Reads still work or say to come back; never a bare SQLSTATE.
    const read = await tenant.get('/v1/customers');
    assert.ok(
      read.status === 200 ||
        (read.status === 503 && /^Error connecting to database: /.test(read.body.errors[0].message)),
      read.text,
    );

    // The primary is back under the same address: the instance recovers without a restart, having
    // ended every connection that found the database read-only.
    await admin(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
    let readyAfter = 0;
    while ((await readiness(server)).status !== 200) {
      readyAfter++;
      assert.ok(readyAfter <= 8, 'ready again once the stale connections are gone');
    }
    for (let n = 0; n < 6; n++) {
      const write = await tenant.post('/api/products/batch-create', products(`C${n}-`, 10));
      assert.equal(write.status, 201, JSON.stringify(write.body));
    }
  });

  test('a session ended between two statements of a transaction fails that transaction, not the process', async () => {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    after(() => scratch.drop());
    const server = await startServer(loadConfig({ ...quiet, DATABASE_URL: scratch.url, DB_POOL_SIZE: '2' }));
    after(() => server.close());
    // The server warns of a pool error as "database pool error": the signal that the FATAL was heard.
    const logged: string[] = [];
    let heard: () => void = () => {};
    // Never heard: a failure naming it after 10 s, not the suite's timeout.
    const poolErrorLogged = new Promise<void>((resolve, reject) => {
      const unheard = setTimeout(() => reject(new Error('the ended session is never reported')), 10_000);
      heard = () => {
        clearTimeout(unheard);
        resolve();
      };
    });
    const logWarn = server.app.log.warn.bind(server.app.log);
    const fields: string[] = [];
    server.app.log.warn = ((...args: Parameters<typeof logWarn>) => {
      logged.push(String(args.find((arg) => typeof arg === 'string')));
      fields.push(JSON.stringify(args.find((arg) => typeof arg === 'object')));
      if (logged.includes('database pool error')) heard();
      return logWarn(...args);
    }) as typeof logWarn;
    const ended = server.db.transaction(async (tx) => {
      const [session] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Waits (up to 5 s) until the session has ended, then until its FATAL (57P01, as at a failover
      // or a fast shutdown) has been heard while no statement runs on the connection; unheard, pg's
      // 'error' event would end the process.
      await admin(`SELECT pg_terminate_backend(${session!.pid}, 5000)`);
      await poolErrorLogged;
      await tx.query('SELECT 1');
    });
    await assert.rejects(ended, (error) => isConnectionError(error));
    assert.deepEqual(logged, ['database pool error'], 'the ended session is logged once');
    assert.match(fields[0]!, /"code":"57P01"/);
    assert.doesNotMatch(fields[0]!, /secretKey|processID|client/, "not pg's client, with its cancel key");
    // The connection is not reused: what comes next gets a new one.
    for (let n = 0; n < 4; n++) {
      assert.deepEqual(await server.db.query('SELECT 1 AS one'), [{ one: 1 }]);
    }
    assert.equal((await readiness(server)).status, 200);
  });

  /** A pool of a scratch database whose reported errors are kept, and the codes of those reported. */
  async function reportingPool() {
    const scratch = await scratchPostgresDatabase(serverUrl!);
    after(() => scratch.drop());
    const reported: Error[] = [];
    const db = openPostgres({
      connectionString: scratch.url,
      poolSize: 2,
      onPoolError: (e) => reported.push(e),
    });
    after(() => db.close());
    /** Until the first report (the server's FATAL): a failure past 5 s, not a pass. */
    const firstReport = async () => {
      for (const deadline = Date.now() + 5_000; reported.length === 0; ) {
        assert.ok(Date.now() < deadline, 'the end of the session is reported');
        await new Promise((done) => setTimeout(done, 10));
      }
    };
    /**
     * The codes reported once the pool has let go of the ended connection. pg emits a session's
     * errors on its own (the FATAL, then "Connection terminated unexpectedly" at the socket's end)
     * only until the connection is ended by its owner: the pool ends one it removes, after which no
     * error of it can come. So: a statement on a new connection of the same pool, then only that one
     * left in the pool, instead of a quiet spell.
     */
    const codesReported = async () => {
      await firstReport();
      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
      assert.equal(db.poolStats().total, 1, 'the ended connection is out of the pool');
      return reported.map((error) => `${(error as Error & { code?: string }).code}: ${error.message}`);
    };
    return { db, firstReport, codesReported };
  }

  test("the end of a session in use is reported once, with the server's reason", async () => {
    const { db, firstReport, codesReported } = await reportingPool();
    const ended = db.transaction(async (tx) => {
      const [session] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin(`SELECT pg_terminate_backend(${session!.pid}, 5000)`);
      // The FATAL heard while no statement runs; then a statement on a second connection, which
      // takes the round trips of a new session: the ended socket's end is heard by then too, so a
      // second report of it (pg's "Connection terminated unexpectedly") would have come.
      await firstReport();
      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
      await tx.query('SELECT 1');
    });
    await assert.rejects(ended, (error) => isConnectionError(error));
    // The server's FATAL, not pg's own "Connection terminated unexpectedly" after it.
    const codes = await codesReported();
    assert.equal(codes.length, 1, codes.join('; '));
    assert.match(codes[0]!, /^57P01: /);
  });

  // An idle connection's error reaches the pool's own 'error': the listener of connections in use
  // must not report it a second time.
  test('the end of an idle session is reported once', async () => {
    const { db, codesReported } = await reportingPool();
    const [session] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await admin(`SELECT pg_terminate_backend(${session!.pid}, 5000)`);
    const codes = await codesReported();
    assert.equal(codes.length, 1, codes.join('; '));
    assert.match(codes[0]!, /^57P01: /);
  });

  test('instances that together want more connections than allowed wait for their own', async () => {
    // A role of its own with a connection limit (a superuser is exempt from limits), owner of the database.
    const role = `sfa_limited_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await admin(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 8`);
    const scratch = await scratchPostgresDatabase(serverUrl!);
    const servers: RunningServer[] = [];
    after(async () => {
      await Promise.all(servers.map((server) => server.close()));
      await scratch.drop();
      await admin(`DROP ROLE IF EXISTS ${role}`);
    });
    const name = new URL(scratch.url).pathname.slice(1);
    await admin(`ALTER DATABASE ${name} OWNER TO ${role}`);
    const url = new URL(scratch.url);
    url.username = role;

    // Three instances of 10 connections each against a limit of 8 (each needs a connection or two to start).
    for (let n = 0; n < 3; n++) {
      servers.push(
        await startServer(loadConfig({ ...quiet, DATABASE_URL: url.toString(), DB_POOL_SIZE: '10' })),
      );
    }
    const tenants = await Promise.all(
      servers.map(async (server, n) =>
        tenantClient(httpTransport(server.url), await createTenant(server.db, `limited-${n}`)),
      ),
    );
    const statuses = new Map<number, number>();
    const messages = new Set<string>();
    await Promise.all(
      tenants.flatMap((tenant, n) =>
        Array.from({ length: 30 }, async (_, at) => {
          const answer =
            at % 3 === 0
              ? await tenant.post('/api/products/batch-create', products(`L${n}-${at}-`, 200))
              : await tenant.get('/v1/customers?limit=5');
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status >= 500) messages.add(answer.body.errors?.[0]?.message);
        }),
      ),
    );
    // A pool refused a connection as one too many opens no more than it holds for 10 s: its stats
    // (and so the metric, and the batch admission's light places) say so.
    const maxes = servers.map((server) => server.db.poolStats().max);
    const failed = [...statuses].filter(([status]) => status !== 200 && status !== 201);
    assert.deepEqual(failed, [], [...messages].join('\n'));
    assert.ok(
      maxes.some((max) => max < 10) && maxes.every((max) => max >= 1),
      `pools' limits after the refusals: ${maxes.join(', ')}`,
    );
    for (const server of servers) assert.equal((await readiness(server)).status, 200);
  });
});
