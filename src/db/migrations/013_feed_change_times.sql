-- When each row took its place in the change feed (changed_at: the writing transaction's now(), set
-- with change_xid by every statement that moves a row: src/sql/changes.ts FEED_MOVE), so that the feed
-- can tell a cursor from a history the database no longer has (extensions.md 10, docs/decisions.md
-- "A restore to an earlier point"). A cursor carries the time it was handed out; in one history every
-- row at or behind its position committed before that time. A row behind it that changed later was
-- written after the database went back to an earlier point (a restored copy, point-in-time recovery, a
-- promoted replica that lagged), where the counter gave out positions again: the cursor is refused.
--
-- Rows already there take '-infinity' ("before the feed knew times"), stored once as the column's
-- value (a constant default: no rewrite); new rows then default to now(). Cursors handed out before
-- this migration carry no time and are checked against '-infinity': every row behind them that is
-- still where it was is from before too, and any row written behind them since is refused.
--
-- No index: the check reads one row, the last one at or behind the cursor's position, through the
-- feed's (tenant_id, change_xid, key) index backwards.

ALTER TABLE products ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE products ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE stocks ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE stocks ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE payment_methods ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE payment_methods ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE factors ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE factors ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE routes ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE routes ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE users ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE users ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE prices ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE prices ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE customers ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE customers ALTER COLUMN changed_at SET DEFAULT now();
ALTER TABLE deliveries ADD COLUMN changed_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE deliveries ALTER COLUMN changed_at SET DEFAULT now();
