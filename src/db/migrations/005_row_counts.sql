-- totalItems of an unfiltered list (GET /v1/customers, GET /v1/deliveries/pending) without counting a
-- million rows per request: a per-tenant count kept by statement-level triggers, so every write path
-- (batch statements, acknowledgement, seeding, manual SQL) keeps it exact, in the same transaction.
-- Filtered lists still count(*) through their indexes.

CREATE TABLE row_counts (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  name text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);

-- customers: every row counts.
CREATE FUNCTION count_customers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Each branch names only the transition table its event has.
  IF TG_OP = 'INSERT' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'customers', count(*) FROM new_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n;
  ELSE
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'customers', -count(*) FROM old_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER customers_counted_insert AFTER INSERT ON customers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_customers();
CREATE TRIGGER customers_counted_delete AFTER DELETE ON customers
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_customers();

-- deliveries: only those not yet acknowledged (the pending list).
CREATE FUNCTION count_pending_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', count(*) FROM new_rows WHERE acknowledged_at IS NULL
    GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', sum(delta) FROM (
      SELECT tenant_id, 1 AS delta FROM new_rows WHERE acknowledged_at IS NULL
      UNION ALL
      SELECT tenant_id, -1 FROM old_rows WHERE acknowledged_at IS NULL
    ) d
    GROUP BY tenant_id HAVING sum(delta) <> 0
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n;
  ELSE
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', -count(*) FROM old_rows WHERE acknowledged_at IS NULL
    GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER deliveries_counted_insert AFTER INSERT ON deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_pending_deliveries();
CREATE TRIGGER deliveries_counted_update AFTER UPDATE ON deliveries
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_pending_deliveries();
CREATE TRIGGER deliveries_counted_delete AFTER DELETE ON deliveries
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_pending_deliveries();

-- Rows that existed before this migration.
INSERT INTO row_counts (tenant_id, name, n)
SELECT tenant_id, 'customers', count(*) FROM customers GROUP BY tenant_id;
INSERT INTO row_counts (tenant_id, name, n)
SELECT tenant_id, 'deliveries_pending', count(*) FROM deliveries WHERE acknowledged_at IS NULL GROUP BY tenant_id;
