-- Filtered lists (GET /v1/customers?modified_from=..., pending deliveries of one seller, ...) still
-- count their rows, 40-170 ms at a million rows; a client walking the pages of one filter paid that on
-- every page. The service now keeps each filtered total in memory with the version below, and the page
-- statement counts again only when the version moved (docs/performance.md): every statement that
-- inserts, updates or deletes rows of a tenant's customers or deliveries bumps it, in the same
-- transaction, whatever filter the change may affect.

ALTER TABLE row_counts ADD COLUMN version bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION count_customers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Each branch names only the transition table its event has.
  IF TG_OP = 'INSERT' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'customers', count(*) FROM new_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  ELSIF TG_OP = 'UPDATE' THEN
    -- An upsert changes updated_at (modified_from) and no count.
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT DISTINCT tenant_id, 'customers', 0 FROM new_rows
    ON CONFLICT (tenant_id, name) DO UPDATE SET version = rc.version + 1;
  ELSE
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'customers', -count(*) FROM old_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER customers_counted_update AFTER UPDATE ON customers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_customers();

CREATE OR REPLACE FUNCTION count_pending_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- Every inserted row's tenant, also when none of them is pending (count 0): its version moves.
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', count(*) FILTER (WHERE acknowledged_at IS NULL) FROM new_rows
    GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', sum(delta) FROM (
      SELECT tenant_id, CASE WHEN acknowledged_at IS NULL THEN 1 ELSE 0 END AS delta FROM new_rows
      UNION ALL
      SELECT tenant_id, CASE WHEN acknowledged_at IS NULL THEN -1 ELSE 0 END FROM old_rows
    ) d
    GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  ELSE
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT tenant_id, 'deliveries_pending', -count(*) FILTER (WHERE acknowledged_at IS NULL) FROM old_rows
    GROUP BY tenant_id
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  END IF;
  RETURN NULL;
END $$;
