-- Deliveries the ERP cannot take (extensions.md 13): a rejected delivery carries when and why it was
-- rejected, leaves the pending list and is listed by GET /v1/deliveries/rejected until it is requeued
-- (both columns null again) or acknowledged (which clears them too). Every existing delivery keeps
-- its state: none is rejected.
ALTER TABLE deliveries ADD COLUMN rejected_at timestamp;
ALTER TABLE deliveries ADD COLUMN rejection_reason varchar(500);

-- Pending means neither acknowledged nor rejected now: the pending list's indexes say so, so its
-- pages stay index scans (and past page 1, index-only scans of the keys).
DROP INDEX deliveries_pending;
CREATE INDEX deliveries_pending ON deliveries (tenant_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL AND rejected_at IS NULL;
DROP INDEX deliveries_pending_client;
CREATE INDEX deliveries_pending_client ON deliveries (tenant_id, client_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL AND rejected_at IS NULL;
DROP INDEX deliveries_pending_seller;
CREATE INDEX deliveries_pending_seller ON deliveries (tenant_id, seller_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL AND rejected_at IS NULL;

-- GET /v1/deliveries/rejected: newest rejection first, the code breaking ties.
CREATE INDEX deliveries_rejected ON deliveries (tenant_id, rejected_at DESC, code DESC)
  WHERE acknowledged_at IS NULL AND rejected_at IS NOT NULL;

-- The two lists' totals and versions (migrations 005, 007): a delivery not acknowledged counts in the
-- pending list or, while rejected, in the rejected one. Every change of a tenant's deliveries moves
-- both lists' versions, as it moved the pending list's before. The two rows of a tenant are written in
-- one order (ORDER BY), so a batch and an acknowledgement of one tenant cannot deadlock on them.
CREATE OR REPLACE FUNCTION count_pending_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT r.tenant_id, l.name,
      count(*) FILTER (WHERE r.acknowledged_at IS NULL AND (r.rejected_at IS NOT NULL) = l.rejected)
    FROM new_rows r
    CROSS JOIN (VALUES ('deliveries_pending', false), ('deliveries_rejected', true)) AS l(name, rejected)
    GROUP BY r.tenant_id, l.name
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT r.tenant_id, l.name,
      sum(CASE WHEN r.acknowledged_at IS NULL AND (r.rejected_at IS NOT NULL) = l.rejected THEN r.delta ELSE 0 END)
    FROM (
      SELECT tenant_id, acknowledged_at, rejected_at, 1 AS delta FROM new_rows
      UNION ALL
      SELECT tenant_id, acknowledged_at, rejected_at, -1 FROM old_rows
    ) r
    CROSS JOIN (VALUES ('deliveries_pending', false), ('deliveries_rejected', true)) AS l(name, rejected)
    GROUP BY r.tenant_id, l.name
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  ELSE
    INSERT INTO row_counts AS rc (tenant_id, name, n)
    SELECT r.tenant_id, l.name,
      -count(*) FILTER (WHERE r.acknowledged_at IS NULL AND (r.rejected_at IS NOT NULL) = l.rejected)
    FROM old_rows r
    CROSS JOIN (VALUES ('deliveries_pending', false), ('deliveries_rejected', true)) AS l(name, rejected)
    GROUP BY r.tenant_id, l.name
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, name) DO UPDATE SET n = rc.n + EXCLUDED.n, version = rc.version + 1;
  END IF;
  RETURN NULL;
END $$;
