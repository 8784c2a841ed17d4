import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { BackgroundLoops } from '../../src/background/background-loops.js';
import type { BackgroundWork } from '../../src/background/background-work.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { EXPIRY_SWEEP, idempotencyExpirySweep } from '../../src/idempotency/expiry-sweep.js';
import { startServer } from '../../src/server.js';
import { claimLease, releaseLease } from '../../src/sql/leases.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { backends } from '../helpers/backends.js';
import { newDatabaseSettings, servedBackends } from '../helpers/served-settings.js';

/*
 * Background work (src/background/): the loops every instance runs beside the server, the leases by
 * which one instance at a time does shared work (migration 014), and the first such work, the sweep of
 * expired Idempotency-Key answers. Rounds are driven directly or awaited as events: nothing sleeps.
 */

/** A promise and the function that settles it. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A lease name of this test alone (the database is shared by the file's tests). */
const leaseName = () => `test-${randomUUID()}`;

/** What another instance's clock would see once the lease's time has passed. */
async function expire(db: Database, name: string): Promise<void> {
  await db.query("UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = $1", [name]);
}

async function answers(db: Database, tenantId: number): Promise<{ live: number; expired: number }> {
  const [row] = await db.query<{ live: number; expired: number }>(
    `SELECT count(*) FILTER (WHERE expires_at > now())::int AS live,
            count(*) FILTER (WHERE expires_at <= now())::int AS expired
     FROM idempotency_keys WHERE tenant_id = $1`,
    [tenantId],
  );
  return row!;
}

async function keepAnswers(db: Database, tenantId: number, prefix: string, n: number, expiresIn: string) {
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, expires_at)
     SELECT $1, $2 || g, 'h', 201, '{}', now() + $3::interval FROM generate_series(1, $4::int) AS g`,
    [tenantId, prefix, expiresIn, n],
  );
}

for (const backend of backends()) {
  describe(`background work on ${backend.name}`, () => {
    test('a lease: one holder at a time, renewed by it, taken over once expired, given up at once', async () => {
      const db = await backend.db();
      const name = leaseName();
      assert.equal(await claimLease(db, name, 'A', 60), true, 'nobody holds it');
      assert.equal(await claimLease(db, name, 'B', 60), false, 'A holds it');
      assert.equal(await claimLease(db, name, 'A', 60), true, 'its holder renews it');
      await expire(db, name);
      assert.equal(await claimLease(db, name, 'B', 60), true, 'expired: the next to look takes it');
      assert.equal(await claimLease(db, name, 'A', 60), false, 'A lost it');
      await releaseLease(db, name, 'A');
      assert.equal(await claimLease(db, name, 'A', 60), false, 'only its holder gives it up');
      await releaseLease(db, name, 'B');
      assert.equal(await claimLease(db, name, 'A', 60), true, 'given up: taken at once');
      await releaseLease(db, name, 'A');
    });

    test('instances that look at once: exactly one gets the lease', async () => {
      const db = await backend.db();
      const name = leaseName();
      const holders = Array.from({ length: 8 }, (_, n) => `I${n}`);
      const got = await Promise.all(holders.map((holder) => claimLease(db, name, holder, 60)));
      assert.equal(got.filter(Boolean).length, 1, JSON.stringify(got));
      await releaseLease(db, name, holders[got.indexOf(true)]!);
    });

    test('the expiry sweep: expired answers go, live ones stay, one instance at a time', async () => {
      const db = await backend.db();
      const tenant = await createTenant(db, `sweep-${randomUUID().slice(0, 8)}`);
      // More than one statement's piece (1,000), so the round goes on until none is left.
      await keepAnswers(db, tenant.tenantId, 'old-', 2_500, '-1 hour');
      await keepAnswers(db, tenant.tenantId, 'live-', 3, '1 hour');
      // The sweep's lease of this test alone: served processes of other files on the same PostgreSQL
      // hold the real one.
      const lease = leaseName();
      const a = idempotencyExpirySweep(db, `A-${randomUUID()}`, lease);
      const b = idempotencyExpirySweep(db, `B-${randomUUID()}`, lease);
      try {
        await a.round();
        assert.equal(a.held(), true);
        assert.deepEqual(await answers(db, tenant.tenantId), { live: 3, expired: 0 });

        // While A holds the lease, B's rounds leave the work to it.
        await keepAnswers(db, tenant.tenantId, 'later-', 5, '-1 minute');
        await b.round();
        assert.equal(b.held(), false);
        assert.deepEqual(await answers(db, tenant.tenantId), { live: 3, expired: 5 });

        // A closes (its server stops): B takes over at its next round.
        await a.close();
        await b.round();
        assert.equal(b.held(), true);
        assert.deepEqual(await answers(db, tenant.tenantId), { live: 3, expired: 0 });

        // B is killed (no close): A waits until the lease expires, then takes over.
        await keepAnswers(db, tenant.tenantId, 'last-', 2, '-1 minute');
        await a.round();
        assert.equal(a.held(), false);
        await expire(db, lease);
        await a.round();
        assert.equal(a.held(), true);
        assert.deepEqual(await answers(db, tenant.tenantId), { live: 3, expired: 0 });
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

describe('background loops', () => {
  const quietLog = () => {
    const warnings: string[] = [];
    return { warnings, log: { warn: (_details: object, message: string) => void warnings.push(message) } };
  };

  test('rounds of one work never overlap; stop waits for the one running, then closes', async () => {
    const events: string[] = [];
    const release = deferred();
    let rounds = 0;
    const work: BackgroundWork = {
      name: 'slow',
      everyMs: 60_000,
      async round() {
        rounds++;
        events.push('round');
        await release.promise;
        events.push('round done');
      },
      async close() {
        events.push('close');
      },
    };
    const loops = new BackgroundLoops([work], quietLog().log);
    const first = loops.runRound('slow');
    const second = loops.runRound('slow');
    assert.equal(rounds, 1, 'the second call joins the round under way');
    const stopped = loops.stop();
    release.resolve();
    await Promise.all([first, second, stopped]);
    assert.deepEqual(events, ['round', 'round done', 'close']);
    assert.throws(() => loops.runRound('missing'), /no background work named missing/);
  });

  test('a nudge runs a round at once only while the loops run', async () => {
    let rounds = 0;
    const ran = deferred();
    const work: BackgroundWork = {
      name: 'nudged',
      everyMs: 3_600_000,
      async round() {
        rounds++;
        ran.resolve();
      },
    };
    const loops = new BackgroundLoops([work], quietLog().log);
    loops.nudge('nudged');
    assert.equal(rounds, 0, 'not before start: tests drive rounds themselves');
    loops.start();
    loops.nudge('nudged');
    await ran.promise;
    assert.equal(rounds, 1, 'the timer (an hour) did not run it: the nudge did');
    await loops.stop();
    loops.nudge('nudged');
    assert.equal(rounds, 1, 'none after stop');
  });

  test('the timer runs rounds; a failing work is logged once until it succeeds again; none after stop', async () => {
    const { warnings, log } = quietLog();
    let fail = true;
    let calls = 0;
    const waiters: Array<{ n: number; resolve: () => void }> = [];
    /** Resolves once the timer has run n rounds in all. */
    const roundsReach = (n: number) =>
      new Promise<void>((resolve) => (calls >= n ? resolve() : waiters.push({ n, resolve })));
    const work: BackgroundWork = {
      name: 'flaky',
      everyMs: 1,
      async round() {
        calls++;
        for (const waiter of waiters.filter((w) => calls >= w.n)) waiter.resolve();
        if (fail) throw new Error('database away');
      },
    };
    const loops = new BackgroundLoops([work], log);
    loops.start();
    await roundsReach(3);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0]!, /background work flaky failed/);
    fail = false;
    await roundsReach(calls + 2);
    fail = true;
    await roundsReach(calls + 2);
    assert.equal(warnings.length, 2, 'a new failure after a success is logged again');
    await loops.stop();
    const atStop = calls;
    loops.start();
    // Absence, seen through a witness: a loop of the same period started after it. Timers of one
    // period fire in the order they were set, so by the witness's third round a timer that start()
    // had set would have fired at least twice.
    let witnessed = 0;
    const witnessRounds = deferred();
    const witness = new BackgroundLoops(
      [
        {
          name: 'witness',
          everyMs: 1,
          async round() {
            if (++witnessed === 3) witnessRounds.resolve();
          },
        },
      ],
      log,
    );
    witness.start();
    await witnessRounds.promise;
    await witness.stop();
    assert.equal(calls, atStop, 'no round after stop, and start() after stop() starts nothing');
  });
});

for (const backend of servedBackends) {
  test(`serve runs the sweep under a lease and gives it up when it closes (${backend})`, async () => {
    const env = await newDatabaseSettings(backend);
    const server = await startServer(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', ...env }));
    const holderOf = async () =>
      (
        await server.db.query<{ holder: string }>('SELECT holder FROM leases WHERE name = $1', [
          EXPIRY_SWEEP.name,
        ])
      )[0]?.holder;
    try {
      assert.deepEqual(server.app.background.names, [
        'feed-stall-watch',
        EXPIRY_SWEEP.name,
        'written-counts-fold',
        'webhook-deliveries',
        'jobs',
      ]);
      await server.app.background.runRound(EXPIRY_SWEEP.name);
      assert.ok(await holderOf(), 'the running instance holds the lease');
    } finally {
      await server.app.close();
    }
    // The app closed (its background stopped, the lease given up); the database is still open.
    assert.equal(await holderOf(), undefined);
    await server.db.close();
  });
}
