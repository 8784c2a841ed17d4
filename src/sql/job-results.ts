import type { Queryable } from '../db/database.js';

/* A job's results (extensions.md 12), as GET /v1/jobs/{id}/results reads them. */

/** The result blocks of one outcome after `afterLine`, in line order, a few at a time. */
export function selectResultBlocks(
  q: Queryable,
  id: string,
  outcome: string,
  afterLine: number,
  limit: number,
): Promise<{ first_line: number; body: string }[]> {
  return q.query(
    `SELECT first_line::float8 AS first_line, body FROM job_results
     WHERE job_id = $1 AND outcome = $2 AND first_line > $3 ORDER BY first_line LIMIT $4`,
    [id, outcome, afterLine, limit],
  );
}
