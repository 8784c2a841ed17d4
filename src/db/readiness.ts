import type { Queryable } from './database.js';

/**
 * Fails with read_only_sql_transaction (25006) unless the database takes writes: a standby after a
 * switchover (reached through the same DNS name or pooler alias) or a primary made read-only must
 * make the instance unready, so that the balancer stops sending it traffic. The failure is of the kind
 * that ends the connection it ran on (src/db/failures.ts), so the pool reconnects to the new primary.
 */
const WRITABLE = `DO $$
BEGIN
  IF pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' THEN
    RAISE EXCEPTION 'database does not accept writes' USING ERRCODE = 'read_only_sql_transaction';
  END IF;
END
$$`;

export async function assertDatabaseWritable(db: Queryable): Promise<void> {
  await db.exec(WRITABLE);
}
