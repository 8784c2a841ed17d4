import { querySchema, type RouteDeclaration } from '../../http/route-schema.js';
import type { ParamRule } from '../../read/query-params.js';
import { batchResources } from '../../resources/index.js';

/*
 * GET /v1/activity and GET /v1/overview (extensions.md 14), declared once: the route checks the
 * query string by these rules and the document shows them.
 */

export const ACTIVITY_PATH = '/v1/activity';
export const OVERVIEW_PATH = '/v1/overview';

/** What the activity's rows name as their resource: a batch resource, or the family of a /v1 write. */
export const ACTIVITY_RESOURCES = [...batchResources.map((r) => r.name), 'webhooks', 'jobs'] as const;

export const ACTIVITY_OUTCOMES = ['failed', 'succeeded'] as const;

/** The cursor of `before`: the id links.next carries. */
export const ACTIVITY_CURSOR = /^[1-9]\d{0,18}$/;
export const CURSOR_MESSAGE = 'Parameter must be the before value of a links.next of this endpoint';

export const ACTIVITY_QUERY: Readonly<Record<string, ParamRule>> = {
  limit: { kind: 'integer', min: 1, max: 100, default: 50 },
  outcome: { kind: 'choice', values: ACTIVITY_OUTCOMES, default: '' },
  resource: { kind: 'choice', values: ACTIVITY_RESOURCES, default: '' },
  before: { kind: 'text', max: 19 },
};

const MEANINGS = {
  limit: 'requests per page',
  outcome: 'failed: answered with a status of 400 or more; succeeded: below 400; absent: both',
  resource: 'only requests that wrote or meant to write this resource (webhooks and jobs: their /v1 writes)',
  before: 'from links.next of an earlier page: the requests recorded before that page ended',
};

const tags = ['Activity'];

export const activityRoutes = {
  activity: {
    method: 'GET',
    url: ACTIVITY_PATH,
    schema: {
      operationId: 'listActivity',
      tags,
      summary: "The tenant's write requests of the last 7 days",
      description:
        'Every write request (POST, PUT, PATCH, DELETE) of the tenant that passed authentication, newest first: when it was answered, its method and path (never its query string or body), status, duration, items and counts, its Idempotency-Key and whether the answer was a replay, its request id and, when it was refused, the first problems its answer gave. A request that wrote is recorded in its own transaction. Answers that say to come back (with Retry-After: the rate limit, no place for a batch, the database out of reach, a key in progress) are not recorded. Kept 7 days.',
      querystring: querySchema(ACTIVITY_QUERY, MEANINGS),
    },
  },
  overview: {
    method: 'GET',
    url: OVERVIEW_PATH,
    schema: {
      operationId: 'getOverview',
      tags,
      summary: "The tenant's integration at a glance",
      description:
        'Rows per resource, pending and rejected deliveries, jobs by state, webhook endpoints by status, and the records written per hour and resource over the last 7 days (UTC hours, the current one last). The counts and the series are kept by the writes as they commit: no request counts a table.',
    },
  },
} as const satisfies Record<string, RouteDeclaration>;
