import { literal } from '../db/sql.js';

/**
 * The CTEs by which a batch's write statement counts its own rows for GET /v1/overview (migration
 * 019's resource_rows and written_hours), read from its CTE `written` (each row written, `inserted`
 * for the new ones): the rows it inserted add to the resource's rows, the rows it inserted or changed
 * to the current hour's records written. Counted as migration 019's triggers count, in the same
 * session slot. The statement then tells those triggers, through `sfa.counted_at` (migration 021),
 * that it counted itself: they cost PostgreSQL 0.4-0.7 ms per 1,000-item upsert where these cost
 * about nothing (docs/decisions/0150-writes-count-themselves.md). `tenant`: the SQL of the tenant id.
 */
export function countingCtes(resource: string, tenant: string): string {
  const name = literal(resource);
  // MATERIALIZED: computed once, set_config included, whatever reads it.
  return `counted AS MATERIALIZED (
  SELECT count(*) FILTER (WHERE inserted) AS created, count(*) AS written,
    set_config('sfa.counted_at', statement_timestamp()::text, true) AS said
  FROM written
),
rows_counted AS (
  INSERT INTO resource_rows AS r (tenant_id, resource, slot, n)
  SELECT ${tenant}, ${name}, pg_backend_pid(), created FROM counted WHERE said IS NOT NULL AND created > 0
  ON CONFLICT (tenant_id, resource, slot) DO UPDATE SET n = r.n + EXCLUDED.n
),
hours_counted AS (
  INSERT INTO written_hours AS h (tenant_id, hour, resource, slot, n)
  SELECT ${tenant}, date_trunc('hour', statement_timestamp(), 'UTC'), ${name}, pg_backend_pid(), written
  FROM counted WHERE said IS NOT NULL AND written > 0
  ON CONFLICT (tenant_id, hour, resource, slot) DO UPDATE SET n = h.n + EXCLUDED.n
)`;
}
