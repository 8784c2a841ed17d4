import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type ClaimPoolOptions, claimPool } from '../../src/background/claim-pool.js';

/*
 * The claim pool (src/background/claim-pool.ts) with units of its own: each run waits for a promise
 * the test resolves by hand, so which units run at a moment is the test's to decide; nothing waits
 * for time.
 */

interface Unit {
  id: string;
  tenant: number;
}

/** A promise and the function that settles it. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** One turn of the event loop: every reaction already due (a run's end, the pool's counts) has run. */
const reactionsRun = () => new Promise<void>((done) => setImmediate(done));

/**
 * A pool over a list of due units. `wholeRows`: the claim ignores the busy tenants past the first
 * unit (as a claim of several rows can), so the pool's own bound must hold them back.
 */
function harness(
  bounds: Pick<ClaimPoolOptions<Unit>, 'max' | 'perTenant' | 'perClaim'>,
  units: Unit[],
  options: { wholeRows?: boolean } = {},
) {
  const due = [...units];
  const claims: { room: number; busy: number[] }[] = [];
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const ended: string[] = [];
  const letGo: string[] = [];
  const runningNow = new Map<number, number>();
  let most = 0;
  let mostOfOneTenant = 0;
  const pool = claimPool<Unit>({
    ...bounds,
    async claim(room, busy) {
      claims.push({ room, busy: [...busy].sort() });
      const taken: Unit[] = [];
      for (const unit of [...due]) {
        if (taken.length === room) break;
        if (busy.includes(unit.tenant) && !(options.wholeRows && taken.length > 0)) continue;
        due.splice(due.indexOf(unit), 1);
        taken.push(unit);
      }
      return taken;
    },
    tenantOf: (unit) => unit.tenant,
    keyOf: (unit) => unit.id,
    async run(unit) {
      const gate = deferred();
      gates.set(unit.id, gate);
      const ofTenant = (runningNow.get(unit.tenant) ?? 0) + 1;
      runningNow.set(unit.tenant, ofTenant);
      most = Math.max(
        most,
        [...runningNow.values()].reduce((sum, n) => sum + n, 0),
      );
      mostOfOneTenant = Math.max(mostOfOneTenant, ofTenant);
      await gate.promise;
      runningNow.set(unit.tenant, runningNow.get(unit.tenant)! - 1);
      ended.push(unit.id);
      if (unit.id.startsWith('fail')) throw new Error(`${unit.id} failed`);
    },
    failed(unit, error) {
      assert.equal((error as Error).message, `${unit.id} failed`);
      ended.push(`${unit.id} (logged)`);
    },
    async letGo(unit) {
      letGo.push(unit.id);
      due.push(unit);
    },
  });
  /** Ends a running unit's run and waits until the pool has counted it out. */
  async function finish(id: string) {
    const gate = gates.get(id);
    assert.ok(gate, `${id} is running`);
    gates.delete(id);
    gate.resolve();
    await reactionsRun();
  }
  return {
    pool,
    due,
    claims,
    ended,
    letGo,
    finish,
    running: () => [...gates.keys()].sort(),
    most: () => most,
    mostOfOneTenant: () => mostOfOneTenant,
  };
}

const unit = (id: string, tenant: number): Unit => ({ id, tenant });

describe('claim pool', () => {
  test('never more than max running, one row a claim: claims while there is room, then stops', async () => {
    const h = harness({ max: 2, perTenant: 1, perClaim: 1 }, [
      unit('a', 1),
      unit('b', 2),
      unit('c', 3),
      unit('d', 4),
      unit('e', 5),
    ]);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a', 'b']);
    assert.equal(h.pool.running, 2);
    assert.deepEqual(h.claims, [
      { room: 1, busy: [] },
      { room: 1, busy: [1] },
    ]);
    // Full: a fill claims nothing.
    await h.pool.fill();
    assert.equal(h.claims.length, 2);
    await h.finish('a');
    assert.equal(h.pool.running, 1);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['b', 'c']);
    assert.deepEqual(h.claims.at(-1), { room: 1, busy: [2] });
    for (const id of ['b', 'c']) await h.finish(id);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['d', 'e']);
    for (const id of ['d', 'e']) await h.finish(id);
    // Nothing due: one claim that comes back empty ends the fill.
    const before = h.claims.length;
    await h.pool.fill();
    assert.equal(h.claims.length, before + 1);
    assert.equal(h.pool.running, 0);
    assert.equal(h.most(), 2);
    assert.deepEqual(h.ended, ['a', 'b', 'c', 'd', 'e']);
  });

  test('never more than max running, several rows a claim: one claim for the room there is', async () => {
    const h = harness({ max: 3, perTenant: 8, perClaim: 64 }, [
      unit('a', 1),
      unit('b', 1),
      unit('c', 2),
      unit('d', 2),
      unit('e', 3),
    ]);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a', 'b', 'c']);
    assert.deepEqual(h.claims, [{ room: 3, busy: [] }], 'a full claim leaves no room: no second claim');
    await h.finish('b');
    await h.finish('c');
    await h.pool.fill();
    assert.deepEqual(h.claims.at(-1), { room: 2, busy: [] });
    assert.deepEqual(h.running(), ['a', 'd', 'e']);
    assert.equal(h.most(), 3);
  });

  test('never two of one tenant when the bound says one, even when a claim takes whole rows', async () => {
    const h = harness({ max: 4, perTenant: 1, perClaim: 4 }, [unit('a1', 1), unit('a2', 1), unit('b1', 2)], {
      wholeRows: true,
    });
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a1', 'b1']);
    assert.deepEqual(h.letGo, ['a2'], "the tenant's second unit is let go, not run");
    assert.equal(h.claims.length, 1, 'a claim whose units did not all start ends the fill');
    assert.deepEqual(h.due, [unit('a2', 1)]);
    // The next claim is told which tenants are at their bound.
    await h.pool.fill();
    assert.deepEqual(h.claims.at(-1), { room: 2, busy: [1, 2] });
    assert.deepEqual(h.running(), ['a1', 'b1']);
    await h.finish('a1');
    await h.pool.fill();
    assert.deepEqual(h.claims.at(-1), { room: 3, busy: [2] });
    assert.deepEqual(h.running(), ['a2', 'b1']);
    assert.equal(h.mostOfOneTenant(), 1);
  });

  test('a bound of several per tenant: a tenant at it is busy, one below it is not', async () => {
    const h = harness({ max: 8, perTenant: 2, perClaim: 1 }, [
      unit('a1', 1),
      unit('a2', 1),
      unit('a3', 1),
      unit('b1', 2),
    ]);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a1', 'a2', 'b1']);
    assert.deepEqual(
      h.claims.map((claim) => claim.busy),
      [[], [], [1], [1]],
    );
    assert.equal(h.mostOfOneTenant(), 2);
  });

  test('stop: no claim after it, also not after a claim under way; running units end as they will', async () => {
    const h = harness({ max: 3, perTenant: 1, perClaim: 1 }, [unit('a', 1), unit('b', 2), unit('c', 3)]);
    await h.pool.fill();
    assert.equal(h.pool.running, 3);
    await h.finish('a');
    h.pool.stop();
    assert.equal(h.pool.stopped, true);
    await h.pool.fill();
    assert.equal(h.claims.length, 3, 'a stopped pool claims nothing');
    assert.deepEqual(h.running(), ['b', 'c']);
    await h.finish('b');
    await h.finish('c');
    await h.pool.settled();
    assert.equal(h.pool.running, 0);

    // Stopped while a claim is under way: what it took is let go at once, not run, and no other claim
    // follows.
    const gate = deferred();
    let claims = 0;
    const ran: string[] = [];
    const released: string[] = [];
    const pool = claimPool<Unit>({
      max: 3,
      perTenant: 1,
      perClaim: 1,
      async claim() {
        claims++;
        await gate.promise;
        return [unit(`u${claims}`, claims)];
      },
      tenantOf: (u) => u.tenant,
      keyOf: (u) => u.id,
      async run(u) {
        ran.push(u.id);
      },
      failed() {},
      async letGo(u) {
        released.push(u.id);
      },
    });
    const filling = pool.fill();
    pool.stop();
    gate.resolve();
    await filling;
    assert.equal(claims, 1);
    await pool.settled();
    assert.deepEqual(ran, [], 'nothing runs once stopped');
    assert.deepEqual(released, ['u1'], 'what the claim under way took is let go');
  });

  test('a unit claimed again while this instance runs it (its lease ran out) is neither started twice nor let go', async () => {
    const h = harness({ max: 3, perTenant: 3, perClaim: 3 }, [unit('a', 1)]);
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a']);
    // Its renewals stalled past the lease: the next claim returns it again.
    h.due.push(unit('a', 1));
    await h.pool.fill();
    assert.deepEqual(h.running(), ['a'], 'one run of it');
    assert.equal(h.pool.running, 1);
    assert.deepEqual(h.letGo, [], 'the running turn keeps its lease');
    await h.finish('a');
    assert.deepEqual(h.ended, ['a']);
  });

  test('settled waits for every unit, also one started after it was called, and for failed ones', async () => {
    const h = harness({ max: 3, perTenant: 1, perClaim: 1 }, [unit('a', 1), unit('fail-b', 2)]);
    await h.pool.fill();
    let settled = false;
    const waiting = h.pool.settled().then(() => {
      settled = true;
      return [...h.ended];
    });
    await h.finish('a');
    assert.equal(settled, false, 'one unit is still running');
    h.due.push(unit('c', 3));
    await h.pool.fill();
    await h.finish('fail-b');
    assert.equal(settled, false, 'the unit started after settled() was called is still running');
    assert.equal(h.pool.running, 1);
    await h.finish('c');
    assert.deepEqual(await waiting, ['a', 'fail-b', 'fail-b (logged)', 'c']);
    assert.equal(h.pool.running, 0);
    // Nothing running: settled at once.
    await h.pool.settled();
  });
});
