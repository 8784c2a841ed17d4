-- Rate-limit counts are worth nothing after a crash (a window lasts a minute), and every request
-- writes one: without WAL, that write no longer waits for a log flush
-- (docs/decisions/0045-rate-limit-quota-leases.md).
ALTER TABLE rate_limits SET UNLOGGED;
