-- A batch's write statement counts its own rows (src/sql/written-counts.ts): the counting triggers of
-- migrations 019 and 020 leave it alone and keep counting every other writer (deliveries' state
-- changes, statements by hand). Each trigger ran a PL/pgSQL aggregate over its transition table and
-- an upsert, and an upsert fires two of them: 0.4-0.7 ms of PostgreSQL's time per 1,000-item price
-- upsert, where the same counts in the statement cost about nothing (docs/performance.md, "Activity
-- and overview"; docs/decisions/0150-writes-count-themselves.md).
--
-- What a batch's write statement counted: one row appended per statement, never updated (updating a
-- counter row per statement cost as much as the triggers under concurrent writers: each update leaves
-- a dead version on one hot page). GET /v1/overview adds them to resource_rows and written_hours
-- until a leased background work folds them into slot 0 there
-- (src/background/written-counts-fold.ts), every 5 seconds.
CREATE TABLE written_deltas (
  tenant_id integer NOT NULL,
  resource text NOT NULL,
  hour timestamptz NOT NULL,
  -- Rows inserted (resource_rows), and rows inserted or changed (written_hours).
  created bigint NOT NULL,
  written bigint NOT NULL
);
CREATE INDEX written_deltas_tenant ON written_deltas (tenant_id);

-- The statement says so by setting sfa.counted_at, transaction-local, to its own statement_timestamp():
-- a later statement of the same transaction has another, so its triggers count it as before.
CREATE OR REPLACE FUNCTION count_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  first_tenant integer;
  last_tenant integer;
  n bigint;
  tenants integer[];
  counts bigint[];
BEGIN
  IF current_setting('sfa.counted_at', true) = statement_timestamp()::text THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    SELECT min(tenant_id), max(tenant_id), count(*) INTO first_tenant, last_tenant, n FROM old_rows;
  ELSE
    SELECT min(tenant_id), max(tenant_id), count(*) INTO first_tenant, last_tenant, n FROM new_rows;
  END IF;
  IF n = 0 THEN
    RETURN NULL;
  ELSIF first_tenant = last_tenant THEN
    tenants := ARRAY[first_tenant];
    counts := ARRAY[n];
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(tenant_id), array_agg(k) INTO tenants, counts
    FROM (SELECT tenant_id, count(*) AS k FROM old_rows GROUP BY tenant_id) g;
  ELSE
    SELECT array_agg(tenant_id), array_agg(k) INTO tenants, counts
    FROM (SELECT tenant_id, count(*) AS k FROM new_rows GROUP BY tenant_id) g;
  END IF;
  FOR i IN 1 .. array_length(tenants, 1) LOOP
    IF TG_OP <> 'UPDATE' THEN
      INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
      VALUES (tenants[i], TG_ARGV[0], pg_backend_pid(), CASE TG_OP WHEN 'DELETE' THEN -counts[i] ELSE counts[i] END)
      ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n;
    END IF;
    IF TG_OP <> 'DELETE' THEN
      INSERT INTO written_hours AS w (tenant_id, hour, resource, slot, n)
      VALUES (tenants[i], date_trunc('hour', statement_timestamp(), 'UTC'), TG_ARGV[0], pg_backend_pid(), counts[i])
      ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = w.n + EXCLUDED.n;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
