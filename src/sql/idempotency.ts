import type { Queryable } from '../db/database.js';

// The kept answers of Idempotency-Key requests (migration 009, extensions.md 8).

/** A kept answer: the request it answered (its hash) and the exact status and body. */
export interface KeptAnswer {
  requestHash: string;
  status: number;
  body: string;
}

/**
 * The running request's claim on a key: a transaction-scoped advisory lock on (tenant, hash of the
 * key), so it ends with the transaction or with the connection of a killed process. The two-integer
 * form keeps it apart from the migrations' one-bigint lock. Two keys of one tenant whose hashes
 * collide (one pair in 4 billion) only make one wait for the other's 409.
 */
const TRY_LOCK = 'SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked';

/** Whether this transaction now holds the key; false while another transaction holds it. */
export async function tryLockKey(tx: Queryable, tenantId: number, key: string): Promise<boolean> {
  const [row] = await tx.query<{ locked: boolean }>(TRY_LOCK, [tenantId, key]);
  return row?.locked === true;
}

const SELECT_KEPT = `SELECT request_hash AS "requestHash", status, body FROM idempotency_keys
WHERE tenant_id = $1 AND key = $2 AND expires_at > now()`;

/** The answer kept for the tenant's key, unless none is or it expired. */
export async function keptAnswer(
  db: Queryable,
  tenantId: number,
  key: string,
): Promise<KeptAnswer | undefined> {
  const [row] = await db.query<KeptAnswer>(SELECT_KEPT, [tenantId, key]);
  return row;
}

/**
 * Keeps an answer; an expired row of the same key (not yet removed) is replaced. Inserted by the
 * transaction that holds the key's lock and found no live row, so a live conflict cannot happen.
 * The same statement removes at most $7 expired answers of any tenant (not this key's): each new
 * answer clears a few old ones, so the table stays near a TTL's worth of keys without a process of
 * its own. SKIP LOCKED: two writers never wait for each other over rows that only need to go.
 */
const INSERT_KEPT = `WITH expired AS (
  DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM idempotency_keys
    WHERE expires_at <= now() AND (tenant_id, key) <> ($1, $2)
    ORDER BY expires_at LIMIT $7 FOR UPDATE SKIP LOCKED
  ))
)
INSERT INTO idempotency_keys AS k (tenant_id, key, request_hash, status, body, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
ON CONFLICT (tenant_id, key) DO UPDATE
SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, body = EXCLUDED.body,
  created_at = now(), expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= now()`;

export async function keepAnswer(
  tx: Queryable,
  tenantId: number,
  key: string,
  answer: KeptAnswer,
  ttlSeconds: number,
  removeExpired: number,
): Promise<void> {
  await tx.query(INSERT_KEPT, [
    tenantId,
    key,
    answer.requestHash,
    answer.status,
    answer.body,
    ttlSeconds,
    removeExpired,
  ]);
}

/** Removes at most $1 expired answers of any tenant, oldest first; SKIP LOCKED as INSERT_KEPT's. */
const REMOVE_EXPIRED = `WITH gone AS (
  DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM idempotency_keys WHERE expires_at <= now()
    ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
  ))
  RETURNING 1
)
SELECT count(*)::int AS n FROM gone`;

/** How many expired answers this statement removed (at most `most`). */
export async function removeExpiredAnswers(q: Queryable, most: number): Promise<number> {
  const [row] = await q.query<{ n: number }>(REMOVE_EXPIRED, [most]);
  return row?.n ?? 0;
}
