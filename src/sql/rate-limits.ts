import type { Queryable } from '../db/database.js';

/** A claim's answer: hits claimed in the window by every instance so far, and the window's time left. */
export interface RateLimitClaim {
  /** The key's total in the current window after this claim (it may pass the limit). */
  total: number;
  /** Milliseconds left of the window, fractional, so that a lease ends when the window does. */
  leftMs: number;
}

/**
 * One statement per claim: the window number comes from the database clock (instances agree even
 * when their clocks drift), the key's older windows are deleted, and the current one grows by the
 * block ($3).
 */
const CLAIM = `WITH clock AS (
  SELECT COALESCE($4::numeric, extract(epoch FROM clock_timestamp())) AS t
), current_window AS (
  SELECT floor(t / $2::int)::bigint AS n, t FROM clock
), pruned AS (
  DELETE FROM rate_limits WHERE key_id = $1 AND window_no < (SELECT n FROM current_window)
)
INSERT INTO rate_limits AS r (key_id, window_no, hits)
SELECT $1, n, $3::int FROM current_window
ON CONFLICT (key_id, window_no) DO UPDATE SET hits = r.hits + $3::int
RETURNING r.hits AS total,
  (((r.window_no + 1) * $2::int - (SELECT t FROM current_window)) * 1000)::float8 AS left_ms`;

/**
 * Adds `hits` to the key's count in the current fixed window of `windowSeconds`, the window of the
 * database's clock, or of `atSeconds` (seconds since 1970) when given: a clock of the caller's (tests).
 */
export async function claimRateLimitHits(
  db: Pick<Queryable, 'query'>,
  keyId: string,
  windowSeconds: number,
  hits: number,
  atSeconds?: number,
): Promise<RateLimitClaim> {
  const [row] = await db.query<{ total: number; left_ms: number }>(CLAIM, [
    keyId,
    windowSeconds,
    hits,
    atSeconds ?? null,
  ]);
  return { total: row!.total, leftMs: row!.left_ms };
}
