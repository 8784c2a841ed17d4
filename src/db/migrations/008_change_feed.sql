-- The change feed (extensions.md 10, GET /v1/changes): every resource table records which
-- transaction wrote each row last (change_xid), and the feed serves rows in (change_xid, key) order,
-- only those below the reading snapshot's xmin: every transaction that can still commit has an xid at
-- or above it, so nothing can later appear behind a cursor already handed out (docs/decisions.md).
--
-- The default covers every insert: a row is new in the transaction that inserts it. The statements
-- that change an existing row set change_xid = pg_current_xact_id() themselves (the batch upsert of
-- src/batch/write-sql.ts, the acknowledgement of src/sql/acknowledge.ts). Delivery items are written
-- only with their new delivery, whose change_xid covers them.
--
-- pg_current_xact_id() is stable, so ADD COLUMN stores it once as the column's value for every row
-- there is (no rewrite): existing rows take the position of this migration's transaction, in key order.
--
-- Each index leads with tenant_id, then the position and the key: a page is one range scan from the
-- cursor, the same at any depth of the feed.
--
-- updated_at: the master data that is insert-if-absent had no modification date; the feed shows one
-- for every resource (null: never updated).

ALTER TABLE products ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX products_changes ON products (tenant_id, change_xid, code);

ALTER TABLE stocks ADD COLUMN updated_at timestamp;
ALTER TABLE stocks ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX stocks_changes ON stocks (tenant_id, change_xid, product_code, location);

ALTER TABLE payment_methods ADD COLUMN updated_at timestamp;
ALTER TABLE payment_methods ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX payment_methods_changes ON payment_methods (tenant_id, change_xid, code);

ALTER TABLE factors ADD COLUMN updated_at timestamp;
ALTER TABLE factors ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX factors_changes ON factors (tenant_id, change_xid, product_code, unit);

ALTER TABLE routes ADD COLUMN updated_at timestamp;
ALTER TABLE routes ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX routes_changes ON routes (tenant_id, change_xid, client_code, seller_code, day);

ALTER TABLE users ADD COLUMN updated_at timestamp;
ALTER TABLE users ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX users_changes ON users (tenant_id, change_xid, code);

ALTER TABLE prices ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX prices_changes ON prices (tenant_id, change_xid, product_code, price_list);

ALTER TABLE customers ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX customers_changes ON customers (tenant_id, change_xid, code);

ALTER TABLE deliveries ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX deliveries_changes ON deliveries (tenant_id, change_xid, code);
