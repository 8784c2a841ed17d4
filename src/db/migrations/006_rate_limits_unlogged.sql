-- Rate-limit counts are worth nothing after a crash (a window lasts a minute), and every request
-- writes one: without WAL, that write no longer waits for a log flush (docs/performance.md).
ALTER TABLE rate_limits SET UNLOGGED;
