-- Bulk jobs (extensions.md 12; src/jobs/, src/sql/jobs.ts).

-- A tenant's jobs. rows_* grow as the job runs; written_line is the last line of the file whose row
-- the writing has committed (the transaction that writes rows also moves it, so a restart resumes
-- right after it). holder/held_until: the instance running the job now (a lease: another takes it
-- over once it expires). Updated once per transaction of a running job: no index on a column that
-- changes then, and room in each page, so those updates stay HOT.
CREATE TABLE jobs (
  id text PRIMARY KEY,
  tenant_id integer NOT NULL REFERENCES tenants (id),
  resource text NOT NULL,
  format text NOT NULL CHECK (format IN ('csv', 'ndjson')),
  on_invalid text NOT NULL CHECK (on_invalid IN ('reject', 'skip')),
  delimiter text NOT NULL,
  state text NOT NULL CHECK (
    state IN ('open', 'queued', 'validating', 'writing', 'succeeded', 'failed', 'aborted')
  ),
  error text,
  rows_received bigint NOT NULL DEFAULT 0,
  rows_invalid bigint NOT NULL DEFAULT 0,
  rows_created bigint NOT NULL DEFAULT 0,
  rows_updated bigint NOT NULL DEFAULT 0,
  rows_ignored bigint NOT NULL DEFAULT 0,
  written_line bigint NOT NULL DEFAULT 0,
  holder text,
  held_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  finished_at timestamptz
) WITH (fillfactor = 50);
CREATE INDEX jobs_tenant ON jobs (tenant_id, created_at DESC, id DESC);
-- The jobs to run, oldest completion first (a tenant's run one at a time, in that order).
CREATE INDEX jobs_to_run ON jobs (completed_at, id) WHERE state IN ('queued', 'validating', 'writing');
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- The parts of a job's file: which upload holds part n now. Sending a part again stores a new upload
-- and then points the part at it, so a part that stops halfway never replaces a whole one.
CREATE TABLE job_parts (
  job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  part integer NOT NULL,
  upload_id bigint NOT NULL,
  bytes bigint NOT NULL,
  PRIMARY KEY (job_id, part)
);

-- An upload's bytes, in pieces of up to a few MiB, stored as they arrive. Not compressed: the
-- pieces are read once, and compressing them would cost the upload more than it saves.
CREATE SEQUENCE job_uploads;
CREATE TABLE job_part_chunks (
  upload_id bigint NOT NULL,
  seq integer NOT NULL,
  job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  data bytea NOT NULL,
  PRIMARY KEY (upload_id, seq)
);
ALTER TABLE job_part_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX job_part_chunks_job ON job_part_chunks (job_id);

-- A job's results: NDJSON lines of one outcome, in line order, a block per transaction of the
-- writing (or per block of invalid rows found by the check), ordered by the block's first line.
-- lines: the file lines of a block of failed rows (the writing leaves them out, also on a resume).
CREATE TABLE job_results (
  job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  outcome text NOT NULL CHECK (outcome IN ('failed', 'created', 'updated', 'ignored')),
  first_line bigint NOT NULL,
  lines bigint[],
  body text NOT NULL,
  PRIMARY KEY (job_id, outcome, first_line)
);
