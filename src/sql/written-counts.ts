import type { Queryable } from '../db/database.js';
import { literal } from '../db/sql.js';

/**
 * The CTEs by which a batch's write statement counts its own rows for GET /v1/overview, read from its
 * CTE `written` (each row written, `inserted` for the new ones): one row appended to written_deltas
 * (migration 021) with the rows it inserted (the resource's rows) and the rows it inserted or changed
 * (the current hour's records written), as migration 019's triggers count them. The statement then
 * tells those triggers, through `sfa.counted_at`, that it counted itself: they cost PostgreSQL
 * 0.4-0.7 ms per 1,000-item upsert, where this costs about nothing
 * (docs/decisions/0150-writes-count-themselves.md). `tenant`: the SQL of the tenant id.
 */
export function countingCtes(resource: string, tenant: string): string {
  // MATERIALIZED: computed once, set_config included, whatever reads it.
  return `counted AS MATERIALIZED (
  SELECT count(*) FILTER (WHERE inserted) AS created, count(*) AS written,
    set_config('sfa.counted_at', statement_timestamp()::text, true) AS said
  FROM written
),
deltas AS (
  INSERT INTO written_deltas (tenant_id, resource, hour, created, written)
  SELECT ${tenant}, ${literal(resource)}, date_trunc('hour', statement_timestamp(), 'UTC'), created, written
  FROM counted WHERE said IS NOT NULL AND written > 0
)`;
}

/**
 * Folds a piece of written_deltas into slot 0 of resource_rows and written_hours: one statement, so a
 * reader of the overview sees each count in one place or the other, never both. Two instances folding
 * at once cannot count a row twice: a row is folded by the statement that deleted it. How many went.
 */
export async function foldWrittenDeltas(q: Queryable, piece: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH taken AS (
  DELETE FROM written_deltas WHERE ctid = ANY (ARRAY(SELECT ctid FROM written_deltas LIMIT $1))
  RETURNING tenant_id, resource, hour, created, written
),
rows_folded AS (
  INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
  SELECT tenant_id, resource, 0, sum(created) FROM taken GROUP BY tenant_id, resource HAVING sum(created) <> 0
  ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n
),
hours_folded AS (
  INSERT INTO written_hours AS h (tenant_id, hour, resource, slot, n)
  SELECT tenant_id, hour, resource, 0, sum(written) FROM taken GROUP BY tenant_id, hour, resource
  ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = h.n + EXCLUDED.n
)
SELECT count(*)::int AS n FROM taken`,
    [piece],
  );
  return rows[0]?.n ?? 0;
}
