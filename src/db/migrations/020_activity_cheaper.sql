-- What recording the activity and counting the writes (migration 019) cost each write, cut
-- (docs/performance.md, "Activity and overview"; docs/decisions/0148-activity-and-overview.md).

-- No foreign key from activity to tenants: its check took a FOR KEY SHARE lock of the tenant's row
-- for every write request, so concurrent writers of one tenant made a MultiXact of it each time, a
-- WAL record and a dirtied page for a row no request changes. The row's tenant is the authenticated
-- request's, and tenants are never deleted (no endpoint or command deletes one).
ALTER TABLE activity DROP CONSTRAINT activity_tenant_id_fkey;

-- The same counts as before, an insert's two counters in one statement: the transition table is read
-- once and one statement runs instead of two (an upsert fires the insert trigger too, its rows often
-- none).
CREATE OR REPLACE FUNCTION count_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
    SELECT tenant_id, TG_ARGV[0], pg_backend_pid(), -count(*) FROM old_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n;
  ELSIF TG_OP = 'INSERT' THEN
    WITH counted AS (SELECT tenant_id, count(*) AS n FROM new_rows GROUP BY tenant_id),
    rows_added AS (
      INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
      SELECT tenant_id, TG_ARGV[0], pg_backend_pid(), n FROM counted
      ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n
    )
    INSERT INTO written_hours AS w (tenant_id, hour, resource, slot, n)
    SELECT tenant_id, date_trunc('hour', statement_timestamp(), 'UTC'), TG_ARGV[0], pg_backend_pid(), n
    FROM counted
    ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = w.n + EXCLUDED.n;
  ELSE
    INSERT INTO written_hours AS w (tenant_id, hour, resource, slot, n)
    SELECT tenant_id, date_trunc('hour', statement_timestamp(), 'UTC'), TG_ARGV[0], pg_backend_pid(), count(*)
    FROM new_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = w.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;
