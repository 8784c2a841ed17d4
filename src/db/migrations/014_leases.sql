-- Leases of work that one instance at a time does for all (src/sql/leases.ts, src/background/): a row
-- per piece of work, naming the instance that holds it until expires_at (the database's clock, so the
-- instances' clocks need not agree). An instance renews its lease each round and gives it up when it
-- closes; one that was killed keeps it only until it expires, then the next instance to look takes it.
CREATE TABLE leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
