import { problems } from '../http/problems.js';
import { IN_PROGRESS_RETRY_AFTER_SECONDS } from '../idempotency/answer-once.js';
import { problemExamples } from './errors.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';

/*
 * What extensions.md 8 and 9 add to the POST operations: the Idempotency-Key header and its answers
 * (every POST under /api and /v1), and the fields the batch endpoints' query parameters add to their
 * answers (the parameters themselves are declared on the route, src/routes/api/batch-schemas.ts).
 */

/** The Idempotency-Key request header. */
export const idempotencyKeyHeader: OpenApiObject = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the request safe to send again (for example after a timeout). The first request with a key ' +
    "is executed and its answer kept (7 days by default), in the same transaction as its writes; the tenant's " +
    'later requests with the key, the same method, path, query and body get that answer byte for byte with ' +
    '`Idempotent-Replayed: true` and write nothing. Another request under the key: 422; while the first still ' +
    'runs: 409 with Retry-After. 5xx answers are not kept: sending again runs the request. A malformed key: 400.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
  example: '6f1c2a9e-erp-job-2024-06-01-stocks-1',
};

/** The header on an answer that was replayed. */
export const replayedHeader: OpenApiObject = {
  'Idempotent-Replayed': {
    description: 'true when this is the kept answer of an earlier request with the same Idempotency-Key',
    schema: { const: 'true' },
  },
};

/** The 409 and 422 of a keyed request. */
export const idempotencyResponses: Record<string, OpenApiObject> = {
  '409': {
    description:
      'A request with this Idempotency-Key is still running (on this or another instance). Nothing was done.',
    headers: {
      'Retry-After': { description: 'Seconds to wait before sending again', schema: { type: 'integer' } },
    },
    content: {
      'application/json': {
        schema: schemaRef('Problem'),
        examples: problemExamples({
          inProgress: {
            summary: 'Key in progress',
            problem: problems.idempotencyInProgress(IN_PROGRESS_RETRY_AFTER_SECONDS),
          },
        }),
      },
    },
  },
  '422': {
    description: 'The Idempotency-Key was used with another endpoint, query or body. Nothing was done.',
    content: {
      'application/json': {
        schema: schemaRef('Problem'),
        examples: problemExamples({
          reused: { summary: 'Key reused', problem: problems.idempotencyKeyReused() },
        }),
      },
    },
  },
};

/** The 400 example of a malformed key. */
export const invalidKeyExample = problemExamples({
  invalidIdempotencyKey: { summary: 'Malformed Idempotency-Key', problem: problems.invalidIdempotencyKey() },
});

/** One element of `items` (outcomes=true). */
export const itemOutcomeSchema: JsonSchema = {
  type: 'object',
  required: ['index', 'key', 'outcome'],
  properties: {
    index: { type: 'integer', minimum: 0, description: 'zero-based position in the array' },
    key: { type: 'object', description: "the item's key fields as sent" },
    outcome: { enum: ['created', 'updated', 'ignored'] },
    duplicateOf: {
      type: 'integer',
      minimum: 0,
      description: 'for a repeated key: the index of the occurrence that was applied',
    },
  },
  additionalProperties: false,
};

/** The fields outcomes=true and on_invalid=skip add to a batch's 201 (or a dry run's 200). */
export const batchOptionalFields: Record<string, JsonSchema> = {
  rejected: {
    type: 'integer',
    minimum: 0,
    description: 'on_invalid=skip: the items left out (their problems in errors)',
  },
  errors: {
    type: 'array',
    description: 'on_invalid=skip: the problems of the items left out, as in the 400 body',
    items: { oneOf: [schemaRef('ItemError'), schemaRef('ArrayError')] },
  },
  items: {
    type: 'array',
    description: 'outcomes=true: one element per item written or ignored, in array order',
    items: schemaRef('ItemOutcome'),
  },
};

/** The 200 of dry_run=true. */
export const batchValidatedSchema: JsonSchema = {
  type: 'object',
  description: 'dry_run=true: the batch is valid; the counts (and outcomes) say what a real run would do.',
  required: ['statusCode', 'message', 'created', 'updated', 'ignored'],
  properties: {
    statusCode: { const: 200 },
    message: { const: 'Validation passed' },
    created: { type: 'integer', minimum: 0 },
    updated: { type: 'integer', minimum: 0 },
    ignored: { type: 'integer', minimum: 0 },
    ...batchOptionalFields,
  },
};
