import type { Queryable } from '../db/database.js';
import { DATE_TIME_SQL_FORMAT } from '../fields/date-time.js';

// GET /v1/overview (extensions.md 14) in one round trip, its JSON built by PostgreSQL. The row counts
// and the written-per-hour series are kept as the writes commit (migrations 019 to 022): each write
// statement appends its counts to written_deltas until src/background/written-counts-fold.ts folds
// them into a few slots per tenant and resource (where the DELETE trigger also counts), all summed
// here; pending
// and rejected deliveries are row_counts'; jobs and webhook endpoints are read as they stand: a
// tenant has at most 16 endpoints, and its jobs are removed some days after they finish
// (src/jobs/job-work.ts), so each is a short walk of its index.

/** Hours in the series: 7 days, the current hour last. */
export const OVERVIEW_HOURS = 168;

const OVERVIEW = `WITH hours AS (
  SELECT generate_series(
    date_trunc('hour', now(), 'UTC') - make_interval(hours => ${OVERVIEW_HOURS - 1}),
    date_trunc('hour', now(), 'UTC'),
    interval '1 hour'
  ) AS hour
),
names AS (SELECT unnest($2::text[]) AS resource),
written AS (
  SELECT resource, hour, sum(n) AS n FROM (
    SELECT resource, hour, n FROM written_hours WHERE tenant_id = $1
    UNION ALL
    SELECT resource, hour, written FROM written_deltas WHERE tenant_id = $1
  ) w
  WHERE hour >= date_trunc('hour', now(), 'UTC') - make_interval(hours => ${OVERVIEW_HOURS - 1})
  GROUP BY resource, hour
),
series AS (
  SELECT names.resource, json_agg(coalesce(written.n, 0) ORDER BY hours.hour) AS counts
  FROM names CROSS JOIN hours
  LEFT JOIN written ON written.resource = names.resource AND written.hour = hours.hour
  GROUP BY names.resource
)
SELECT json_build_object(
  'rows', (
    SELECT json_object_agg(names.resource, coalesce(r.n, 0) ORDER BY names.resource)
    FROM names LEFT JOIN (
      SELECT resource, sum(n)::bigint AS n FROM (
        SELECT resource, n FROM resource_rows WHERE tenant_id = $1
        UNION ALL
        SELECT resource, created FROM written_deltas WHERE tenant_id = $1
      ) c GROUP BY resource
    ) r ON r.resource = names.resource
  ),
  'deliveries', json_build_object(
    'pending', coalesce((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'deliveries_pending'), 0),
    'rejected', coalesce((SELECT n FROM row_counts WHERE tenant_id = $1 AND name = 'deliveries_rejected'), 0)
  ),
  'jobs', (
    SELECT json_build_object(
      'open', count(*) FILTER (WHERE state = 'open'),
      'running', count(*) FILTER (WHERE state IN ('queued', 'validating', 'writing')),
      'failed_last_7_days', count(*) FILTER (WHERE state = 'failed' AND finished_at > now() - interval '7 days'),
      'succeeded_last_7_days', count(*) FILTER (WHERE state = 'succeeded' AND finished_at > now() - interval '7 days')
    ) FROM jobs WHERE tenant_id = $1
  ),
  'webhooks', (
    SELECT json_build_object(
      'active', count(*) FILTER (WHERE status = 'active' AND failing_since IS NULL),
      'failing', count(*) FILTER (WHERE status = 'active' AND failing_since IS NOT NULL),
      'paused', count(*) FILTER (WHERE status = 'paused'),
      'disabled', count(*) FILTER (WHERE status = 'disabled')
    ) FROM webhook_endpoints WHERE tenant_id = $1
  ),
  'written_per_hour', json_build_object(
    'hours', (SELECT json_agg(to_char(hour AT TIME ZONE 'UTC', ${DATE_TIME_SQL_FORMAT}) ORDER BY hour) FROM hours),
    'resources', (SELECT json_object_agg(resource, counts ORDER BY resource) FROM series)
  )
)::text AS overview`;

/** The overview of one tenant as JSON text; `resources`: the names counted, in the order shown. */
export async function overviewJson(
  q: Queryable,
  tenantId: number,
  resources: readonly string[],
): Promise<string> {
  const [row] = await q.query<{ overview: string }>(OVERVIEW, [tenantId, resources]);
  return row!.overview;
}
