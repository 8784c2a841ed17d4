-- Retry-safe writes (extensions.md 8): the answer kept for each Idempotency-Key of a tenant.
--
-- A row is inserted in the same transaction as the batch it answers, so it exists exactly when the
-- batch committed. A request that is still running has no row: it holds a transaction-scoped advisory
-- lock on (tenant, key) instead, which a second request tests with pg_try_advisory_xact_lock (409).
-- That lock ends with the transaction, or with the connection of a killed process, so no key can stay
-- "in progress"; it needs no session state (PgBouncer in transaction mode).
--
-- request_hash: SHA-256 (hex) of method, path with query, and the body's bytes: the same key with another
-- request is refused (422). body: the answer's exact text, replayed byte for byte.
-- expires_at: after it the row is ignored and removed by a later insert, a few rows at a time
-- (src/sql/idempotency.ts); the index keeps that removal a short range scan.

CREATE TABLE idempotency_keys (
  tenant_id integer NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  key text NOT NULL,
  request_hash text NOT NULL,
  status smallint NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
