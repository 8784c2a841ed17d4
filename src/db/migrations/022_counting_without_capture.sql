-- Every statement of the service that inserts or changes a resource's rows counts them itself
-- (src/sql/written-counts.ts: batches and bulk jobs, and the acknowledgement, rejection and requeue of
-- deliveries), so the INSERT and UPDATE counting triggers of migration 019 go. Even returning at once
-- they cost each batch what PostgreSQL spends to keep their transition tables: 0.6 ms of a 1,000-row
-- price upsert's 11.1 ms (docs/performance.md, "Activity and overview";
-- docs/decisions/0150-writes-count-themselves.md). What no longer counts: rows inserted or changed by
-- hand, and a restore's renumbering of feed positions (it changes no field). No statement of the
-- service deletes a resource's rows, so the DELETE trigger stays: rows deleted by hand are uncounted.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['products', 'prices', 'stocks', 'users', 'factors', 'payment_methods', 'routes',
    'customers', 'deliveries'] LOOP
    EXECUTE format('DROP TRIGGER %1$s_written_insert ON %1$I', t);
    EXECUTE format('DROP TRIGGER %1$s_written_update ON %1$I', t);
  END LOOP;
END $$;

-- What the DELETE trigger is left to do: uncount the rows deleted, per tenant.
CREATE OR REPLACE FUNCTION count_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
  SELECT tenant_id, TG_ARGV[0], pg_backend_pid(), -count(*) FROM old_rows GROUP BY tenant_id
  ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n;
  RETURN NULL;
END $$;
