-- Request counts of the rate limit (src/http/rate-limit.ts), shared by every instance on this database:
-- one row per subscription key id (never the key) and fixed window, incremented by one upsert per
-- request. window_no is the number of the window since the epoch (floor(epoch seconds / window length)),
-- taken from the database clock so that instances with drifting clocks agree. Counts are worthless
-- after their window, so the table is UNLOGGED (no WAL; emptied after a crash, which only forgives a
-- minute of requests) and old windows of a key are deleted by the same statement.
CREATE UNLOGGED TABLE rate_limits (
  key_id varchar(32) NOT NULL,
  window_no bigint NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (key_id, window_no)
);
