import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { batchResources } from '../resources/index.js';
import { DELIVERY_SCHEDULE } from '../routes/v1/webhook-schemas.js';
import { PACKAGE } from '../version.js';
import { activityPaths, activitySchemas } from './activity-paths.js';
import { batchCreatedSchema, batchInputSchemas, batchPaths } from './batch-paths.js';
import { changesPath, changesSchemas } from './changes-path.js';
import { errorResponses, errorSchemas } from './errors.js';
import { batchValidatedSchema, itemOutcomeSchema } from './idempotency.js';
import { jobPaths, jobSchemas } from './job-paths.js';
import type { OpenApiObject } from './json-schema.js';
import { operationsPaths } from './operations-paths.js';
import { readPaths, readSchemas } from './read-paths.js';
import { securitySchemes } from './security.js';
import { tokenPath, tokenSchemas } from './token-path.js';
import { webhookDeliveries, webhookPaths, webhookSchemas } from './webhook-paths.js';

const DESCRIPTION = `Back-office API of the sales-force system: customer and pending-delivery downloads (\`/v1\`),
master-data batch uploads (\`/api\`). This document, OpenAPI 3.1, is served at [\`GET /openapi.json\`](/openapi.json).

**Authentication.** Every \`/api\` and \`/v1\` request sends two headers: \`Subscription-Key\` and
\`Authorization: Bearer <access_token>\`. The token comes from \`POST /token\` (OAuth 2.0 client
credentials) with the client id and secret of an API client of the same tenant. Here: **Authorize**, enter
the subscription key and the client id and secret, then **Try it out** on any operation.

**Batches** take a JSON array of 1 to ${MAX_BATCH_ITEMS} objects. Decimals are JSON numbers or numeric
strings (\`"1500.25"\`); every digit is kept. DateTimes are \`yyyy-MM-ddTHH:mm:ss\` without a zone (UTC when
the service sets them). Errors have the shape \`{"statusCode": N, "errors": [...]}\`; POST /token answers
RFC 6749 errors.`;

/** The OpenAPI 3.1 document of the service, generated from the field tables and the read rules. */
export function buildOpenApiDocument(): OpenApiObject {
  const { name, version } = PACKAGE;
  return {
    openapi: '3.1.0',
    info: { title: name, version, description: DESCRIPTION },
    tags: [
      { name: 'Authentication', description: 'Access tokens for the /api and /v1 endpoints.' },
      {
        name: 'Read',
        description:
          "Customers and pending deliveries, filtered and paged; downloaded deliveries acknowledged; every resource's changes in commit order.",
      },
      {
        name: 'Batch upload',
        description: `Master data in batches of 1 to ${MAX_BATCH_ITEMS} objects, each batch validated whole and written at once.`,
      },
      {
        name: 'Webhooks',
        description: `Changes pushed as they commit: endpoints that receive every change of the resources they chose, in the feed's order, signed. ${DELIVERY_SCHEDULE}`,
      },
      {
        name: 'Bulk jobs',
        description:
          'Files of any size, CSV or NDJSON, sent in parts: checked whole by the batch rules, then written resumably in the background.',
      },
      {
        name: 'Activity',
        description:
          "What the tenant's integration did: its write requests of the last 7 days, and its data at a glance.",
      },
      { name: 'Operations', description: 'Liveness and readiness, without credentials.' },
    ],
    paths: {
      '/token': tokenPath,
      ...readPaths(),
      ...changesPath(),
      ...batchPaths(batchResources),
      ...webhookPaths(),
      ...jobPaths(),
      ...activityPaths(),
      ...operationsPaths,
    },
    webhooks: webhookDeliveries(),
    components: {
      securitySchemes,
      schemas: {
        ...readSchemas(),
        ...changesSchemas(),
        ...batchInputSchemas(batchResources),
        BatchCreated: batchCreatedSchema,
        BatchValidated: batchValidatedSchema,
        ItemOutcome: itemOutcomeSchema,
        ...errorSchemas,
        ...tokenSchemas,
        ...webhookSchemas(),
        ...jobSchemas(),
        ...activitySchemas(),
      },
      responses: errorResponses,
    },
  };
}

let text: string | undefined;

/** The document as served and committed (docs/openapi.json): two-space JSON and a final newline. */
export function openApiJson(): string {
  text ??= `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
  return text;
}
