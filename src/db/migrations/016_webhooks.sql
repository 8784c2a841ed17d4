-- Webhooks (extensions.md 11; src/webhooks/, src/sql/webhook-*.ts).

-- A tenant's endpoints (resources in the order given; their positions are in webhook_streams). The secrets sign deliveries, so they cannot be hashed: they are kept sealed
-- with a server key (src/webhooks/secret-sealing.ts). The previous secret signs too until
-- previous_secret_until (a rotation's 24 hours). failing_since is the first failed attempt of the
-- current row of failures, across the endpoint's resources; 3 days of them disable the endpoint.
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  tenant_id integer NOT NULL REFERENCES tenants (id),
  url text NOT NULL,
  resources text[] NOT NULL,
  description text,
  batch_size integer NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'paused', 'disabled')),
  disabled_reason text,
  failing_since timestamptz,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at, id);

-- One row per endpoint and resource: where its deliveries stand in the change feed. position_* is
-- the place after the last record the endpoint took (xid8 and key as the feed's cursor carries
-- them, when it was handed out (null: a cursor older than that), in which generation of the feed's numbering). pending_* is the
-- delivery under way, if any: its id (the same on every attempt), the place of its last record and
-- how many records it held; a repeat reads the same range again. holder/held_until: the instance
-- sending for this row now (a lease: another takes over once it expires). next_attempt_at: when the
-- row is due (a failed delivery's backoff).
CREATE TABLE webhook_streams (
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  resource text NOT NULL,
  tenant_id integer NOT NULL,
  position_xid xid8 NOT NULL,
  position_key text[],
  position_t int8,
  generation integer NOT NULL,
  pending_id text,
  pending_xid xid8,
  pending_key text[],
  pending_count integer,
  pending_t int8,
  failures integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  holder text,
  held_until timestamptz,
  PRIMARY KEY (endpoint_id, resource)
) WITH (fillfactor = 50);
-- Each delivery updates its stream's row several times (claimed, begun, delivered): no index on a
-- column that changes, and room left in each page, so every update is a HOT update that page pruning
-- cleans up as it goes. With an index on next_attempt_at the rows' dead versions piled up faster
-- than autovacuum removed them, and the claim's scan of a few hundred streams took a second.

-- The deliveries log: attempts, newest last; an endpoint's response body is never kept. Trimmed to
-- the latest attempts of each endpoint as new ones are written.
CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id text NOT NULL,
  resource text NOT NULL,
  records integer NOT NULL,
  attempt integer NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id DESC);
