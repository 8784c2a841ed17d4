-- Bulk jobs (extensions.md 12): the rows the check found valid, kept for the writing, so that the
-- file is parsed and checked once, not twice (docs/decisions.md, "A job's checked rows kept").
-- A block per block of the check, by its last line: its valid rows as one JSON array of
-- [line, key as sent (JSON text), normalised values], in line order. The writing takes them in
-- line order and removes each block in the transaction that writes it; what is left goes with the
-- parts' bytes when the job finishes. Read once and soon: not compressed.
CREATE TABLE job_checked_rows (
  job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  last_line bigint NOT NULL,
  rows text NOT NULL,
  PRIMARY KEY (job_id, last_line)
);
ALTER TABLE job_checked_rows ALTER COLUMN rows SET STORAGE EXTERNAL;

-- Whether the job's check kept its valid rows (every check from this migration on). A job that was
-- writing before it is written from its file again: its rows are checked once more, then kept.
ALTER TABLE jobs ADD COLUMN rows_kept boolean NOT NULL DEFAULT false;
