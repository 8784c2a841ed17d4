-- What the console's Activity and Overview pages read, for every client (extensions.md 14;
-- docs/decisions/0148-activity-and-overview.md).

-- A tenant's write requests of the last 7 days (GET /v1/activity). A request that writes records its
-- row in its own transaction, so a committed write always has one and a rolled-back one none; a
-- refused request records its row before its answer is sent. Never a body or a secret: the path
-- without its query string, the counts, and the first problems the answer gave. Removed after 7 days
-- by the expiry sweep (src/idempotency/expiry-sweep.ts), oldest first through activity_at.
CREATE TABLE activity (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  at timestamptz NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  resource text,
  status smallint NOT NULL,
  duration_ms integer NOT NULL,
  items integer,
  created integer,
  updated integer,
  ignored integer,
  idempotency_key text,
  replayed boolean NOT NULL,
  request_id text NOT NULL,
  problems jsonb,
  PRIMARY KEY (tenant_id, id)
);
-- The filters of the page, newest first: outcome=failed, resource=R (outcome=succeeded walks the
-- primary key and skips the failures, a small share).
CREATE INDEX activity_failed ON activity (tenant_id, id) WHERE status >= 400;
CREATE INDEX activity_resource ON activity (tenant_id, resource, id) WHERE resource IS NOT NULL;
CREATE INDEX activity_at ON activity (at);

-- Records written per hour and resource (the Overview's chart) and the rows of every resource, kept by
-- statement-level triggers in the writing transaction (like row_counts, migration 005): every write
-- path counts, and no request counts a table. An upsert counts the rows it inserted or changed; rows
-- it left unchanged count nothing. Each transaction adds to rows of its own server session's slot
-- (pg_backend_pid(): a session runs one transaction at a time), so concurrent writers of one tenant
-- never wait for each other's counts, and a transaction held open blocks no other writer. The expiry
-- sweep folds the slots of resource_rows into slot 0 and removes hours older than 8 days.
CREATE TABLE written_hours (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  hour timestamptz NOT NULL,
  resource text NOT NULL,
  slot integer NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tenant_id, hour, resource, slot)
);
CREATE INDEX written_hours_hour ON written_hours (hour);

CREATE TABLE resource_rows (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  resource text NOT NULL,
  slot integer NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tenant_id, resource, slot)
);

-- TG_ARGV[0]: the resource's name.
CREATE FUNCTION count_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
    SELECT tenant_id, TG_ARGV[0], pg_backend_pid(), -count(*) FROM old_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
    SELECT tenant_id, TG_ARGV[0], pg_backend_pid(), count(*) FROM new_rows GROUP BY tenant_id
    ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n;
  END IF;
  INSERT INTO written_hours AS w (tenant_id, hour, resource, slot, n)
  SELECT tenant_id, date_trunc('hour', statement_timestamp(), 'UTC'), TG_ARGV[0], pg_backend_pid(), count(*)
  FROM new_rows GROUP BY tenant_id
  ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = w.n + EXCLUDED.n;
  RETURN NULL;
END $$;

-- Each resource's table: one trigger per event (a trigger with transition tables takes one event).
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES
    ('products', 'products'), ('prices', 'prices'), ('stocks', 'stocks'), ('users', 'users'),
    ('factors', 'factors'), ('payment_methods', 'payment-methods'), ('routes', 'routes'),
    ('customers', 'customers'), ('deliveries', 'deliveries')
  ) AS r(tab, resource) LOOP
    EXECUTE format(
      'CREATE TRIGGER %1$s_written_insert AFTER INSERT ON %1$I REFERENCING NEW TABLE AS new_rows '
      'FOR EACH STATEMENT EXECUTE FUNCTION count_written(%2$L)', t.tab, t.resource);
    EXECUTE format(
      'CREATE TRIGGER %1$s_written_update AFTER UPDATE ON %1$I REFERENCING NEW TABLE AS new_rows '
      'FOR EACH STATEMENT EXECUTE FUNCTION count_written(%2$L)', t.tab, t.resource);
    EXECUTE format(
      'CREATE TRIGGER %1$s_written_delete AFTER DELETE ON %1$I REFERENCING OLD TABLE AS old_rows '
      'FOR EACH STATEMENT EXECUTE FUNCTION count_written(%2$L)', t.tab, t.resource);
    -- The rows that existed before this migration.
    EXECUTE format(
      'INSERT INTO resource_rows (tenant_id, resource, slot, n) SELECT tenant_id, %L, 0, count(*) FROM %I GROUP BY tenant_id',
      t.resource, t.tab);
  END LOOP;
END $$;
