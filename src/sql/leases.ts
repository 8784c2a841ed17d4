import type { Queryable } from '../db/database.js';

// Leases of shared background work (migration 014, src/background/leased-work.ts).

/**
 * Takes or renews the lease: a row for a name nobody holds, or held by this holder, or expired. One
 * statement, so instances that look at once agree: the row lock lets one of them through, and the
 * others see its fresh expires_at.
 */
const CLAIM = `INSERT INTO leases AS l (name, holder, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
RETURNING 1 AS claimed`;

/** Whether this holder now holds the lease, for the next `seconds`. */
export async function claimLease(
  q: Queryable,
  name: string,
  holder: string,
  seconds: number,
): Promise<boolean> {
  const rows = await q.query<{ claimed: number }>(CLAIM, [name, holder, seconds]);
  return rows.length > 0;
}

const RELEASE = 'DELETE FROM leases WHERE name = $1 AND holder = $2';

/** Gives the lease up, when this holder has it: the next instance to look takes it at once. */
export async function releaseLease(q: Queryable, name: string, holder: string): Promise<void> {
  await q.query(RELEASE, [name, holder]);
}
