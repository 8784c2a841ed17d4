import { PROBLEMS_KEPT } from '../http/activity-recording.js';
import { batchResources } from '../resources/index.js';
import { ACTIVITY_RESOURCES, activityRoutes, CURSOR_MESSAGE } from '../routes/v1/activity-schemas.js';
import { OVERVIEW_HOURS } from '../sql/overview.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';
import { commonResponses, DATE_TIME, fieldErrorsResponse, json } from './management-operations.js';
import { declaredPaths } from './route-operations.js';

/*
 * GET /v1/activity and GET /v1/overview (extensions.md 14): their answers' shapes; what they take is
 * declared on their routes (src/routes/v1/activity-schemas.ts).
 */

const count = { type: 'integer', minimum: 0 };
const nullableCount = { type: ['integer', 'null'], minimum: 0 };
const resourceNames = batchResources.map((resource) => resource.name);

const activityProperties: Record<string, JsonSchema> = {
  at: { ...DATE_TIME, description: 'when it was answered (UTC)' },
  method: { enum: ['POST', 'PUT', 'PATCH', 'DELETE'] },
  path: { type: 'string', description: 'the path, without the query string' },
  resource: {
    anyOf: [{ enum: [...ACTIVITY_RESOURCES] }, { type: 'null' }],
    description: 'the resource it wrote or meant to write (webhooks, jobs: their /v1 writes)',
  },
  status: { type: 'integer', description: 'the status answered' },
  duration_ms: { ...count, description: 'from the request to its answer (to its write, when it wrote)' },
  items: { ...nullableCount, description: "a written batch's items; null otherwise" },
  created: nullableCount,
  updated: nullableCount,
  ignored: nullableCount,
  idempotency_key: { type: ['string', 'null'] },
  replayed: { type: 'boolean', description: 'the answer was the one kept for its Idempotency-Key' },
  request_id: { type: 'string', description: 'the X-Request-Id of its answer' },
  problems: {
    anyOf: [{ type: 'array', maxItems: PROBLEMS_KEPT, items: { type: 'object' } }, { type: 'null' }],
    description: `a refused request's first ${PROBLEMS_KEPT} problems, as its answer gave them; null otherwise`,
  },
};

const exampleActivity = {
  at: '2026-11-27T02:00:41',
  method: 'POST',
  path: '/api/prices/batch-create',
  resource: 'prices',
  status: 201,
  duration_ms: 182,
  items: 10_000,
  created: 9_400,
  updated: 600,
  ignored: 0,
  idempotency_key: 'erp-prices-2026-11-27-0042',
  replayed: false,
  request_id: '5d0f4a52-5a8b-4f51-9b8a-4c4f6b3f2a10',
  problems: null,
};

const countsByResource: JsonSchema = {
  type: 'object',
  required: resourceNames,
  properties: Object.fromEntries(resourceNames.map((name) => [name, count])),
  additionalProperties: false,
};

const counted = (names: readonly string[], description: string): JsonSchema => ({
  type: 'object',
  description,
  required: [...names],
  properties: Object.fromEntries(names.map((name) => [name, count])),
  additionalProperties: false,
});

const overviewSchema: JsonSchema = {
  type: 'object',
  description: "The tenant's integration at a glance.",
  required: ['rows', 'deliveries', 'jobs', 'webhooks', 'written_per_hour'],
  properties: {
    rows: { ...countsByResource, description: 'rows per resource' },
    deliveries: counted(['pending', 'rejected'], 'deliveries not acknowledged: pending, and rejected'),
    jobs: counted(
      ['open', 'running', 'failed_last_7_days', 'succeeded_last_7_days'],
      'bulk jobs: taking parts, queued or running, and finished in the last 7 days',
    ),
    webhooks: counted(
      ['active', 'failing', 'paused', 'disabled'],
      'webhook endpoints by status (failing: active with failing_since set)',
    ),
    written_per_hour: {
      type: 'object',
      description: `records written (inserted, or changed by an upsert or a state change) per UTC hour, the last ${OVERVIEW_HOURS} hours, the current one last`,
      required: ['hours', 'resources'],
      properties: {
        hours: { type: 'array', minItems: OVERVIEW_HOURS, maxItems: OVERVIEW_HOURS, items: DATE_TIME },
        resources: {
          type: 'object',
          description: 'per resource, one count per hour of `hours`',
          required: resourceNames,
          properties: Object.fromEntries(
            resourceNames.map((name) => [
              name,
              { type: 'array', minItems: OVERVIEW_HOURS, maxItems: OVERVIEW_HOURS, items: count },
            ]),
          ),
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};

export function activitySchemas(): Record<string, JsonSchema> {
  return {
    ActivityEntry: {
      type: 'object',
      description: 'One write request of the tenant.',
      required: Object.keys(activityProperties),
      properties: activityProperties,
      additionalProperties: false,
    },
    Overview: overviewSchema,
  };
}

function exampleOverview() {
  const hours = Array.from({ length: OVERVIEW_HOURS }, (_, n) =>
    new Date(Date.UTC(2026, 10, 20, 4) + n * 3_600_000).toISOString().slice(0, 19),
  );
  const series = (every: number) => hours.map((_, n) => (n % 24 === 2 ? every : 0));
  return {
    rows: Object.fromEntries(resourceNames.map((name) => [name, name === 'customers' ? 1_000_000 : 25_000])),
    deliveries: { pending: 120, rejected: 3 },
    jobs: { open: 0, running: 1, failed_last_7_days: 1, succeeded_last_7_days: 6 },
    webhooks: { active: 2, failing: 0, paused: 1, disabled: 0 },
    written_per_hour: {
      hours,
      resources: Object.fromEntries(
        resourceNames.map((name) => [name, series(name === 'prices' ? 40_000 : 500)]),
      ),
    },
  };
}

export function activityPaths(): Record<string, OpenApiObject> {
  return declaredPaths(Object.values(activityRoutes), {
    listActivity: {
      responses: {
        '200': {
          description: 'One page of write requests, newest first.',
          content: json(
            {
              type: 'object',
              required: ['data', 'links'],
              properties: {
                data: { type: 'array', items: schemaRef('ActivityEntry') },
                links: {
                  type: 'object',
                  required: ['next'],
                  properties: {
                    next: {
                      type: ['string', 'null'],
                      description: 'the next page (older requests); null: none',
                    },
                  },
                  additionalProperties: false,
                },
              },
              additionalProperties: false,
            },
            {
              data: [exampleActivity],
              links: { next: 'https://api.example.com/v1/activity?limit=50&before=184467' },
            },
          ),
        },
        '400': fieldErrorsResponse('A parameter refused.', 'before', CURSOR_MESSAGE),
        ...commonResponses,
      },
    },
    getOverview: {
      responses: {
        '200': { description: 'The overview.', content: json(schemaRef('Overview'), exampleOverview()) },
        '400': { description: 'An unknown parameter.', content: json(schemaRef('ParameterErrors')) },
        ...commonResponses,
      },
    },
  });
}
