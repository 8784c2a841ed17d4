import { markUnknownReferences } from '../batch/references.js';
import { validateItems } from '../batch/validate-items.js';
import { DecimalField, IntegerField, ItemsField, TextField } from '../fields/field.js';
import { problems } from '../http/problems.js';
import { type BatchResource, MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { batchQuery } from '../routes/api/batch-schemas.js';
import { bodyTooLargeResponse, problemExamples } from './errors.js';
import { exampleObject, objectSchema, type SchemaContext } from './field-schemas.js';
import {
  batchOptionalFields,
  idempotencyKeyHeader,
  idempotencyResponses,
  invalidKeyExample,
  replayedHeader,
} from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { pascalCase, responseRef, schemaRef, singular } from './json-schema.js';
import { parametersIn } from './route-operations.js';
import { apiSecurity } from './security.js';

/** Component names of the objects a batch endpoint takes: 'StockInput', 'DeliveryItemInput'. */
export const inputSchemaName = (resource: BatchResource) => `${pascalCase(singular(resource.name))}Input`;
const childInputSchemaName = (resource: BatchResource) => `${pascalCase(singular(resource.name))}ItemInput`;

export const requestContext = (resource: BatchResource): SchemaContext => ({
  direction: 'request',
  childSchema: () => schemaRef(childInputSchemaName(resource)),
});

/** The request object schemas of every batch endpoint (and of their child objects). */
export function batchInputSchemas(resources: readonly BatchResource[]): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  for (const resource of resources) {
    const context = requestContext(resource);
    const noun = singular(resource.name).replace(/-/g, ' ');
    schemas[inputSchemaName(resource)] = objectSchema(resource.fields, context, {
      description: `One ${noun} of POST ${resource.path}.`,
    });
    for (const field of resource.fieldList) {
      if (field instanceof ItemsField) {
        schemas[childInputSchemaName(resource)] = objectSchema(field.fields, context, {
          description: `One of the items of a ${noun}.`,
        });
      }
    }
  }
  return schemas;
}

export const batchCreatedSchema: JsonSchema = {
  type: 'object',
  description:
    'The batch was written. created: new keys; updated: keys that existed (upsert ' +
    'endpoints); ignored: existing keys of insert-if-absent endpoints and earlier repeats of a key within ' +
    'the batch. rejected and errors with on_invalid=skip, items with outcomes=true.',
  required: ['statusCode', 'message', 'created', 'updated', 'ignored'],
  properties: {
    statusCode: { const: 201 },
    message: { type: 'string' },
    created: { type: 'integer', minimum: 0 },
    updated: { type: 'integer', minimum: 0 },
    ignored: { type: 'integer', minimum: 0 },
    ...batchOptionalFields,
  },
};

/** The array rules and invalid JSON, shared by every array body (backoffice-api.md 7.1). */
export function arrayRuleExamples(max: number = MAX_BATCH_ITEMS) {
  return problemExamples({
    invalidJson: { summary: 'Body is not valid JSON', problem: problems.invalidJson() },
    notAnArray: { summary: 'Body is not an array', problem: problems.notAnArray() },
    emptyArray: { summary: 'Empty array', problem: problems.emptyArray() },
    tooManyItems: {
      summary: `More than ${max} items`,
      problem: problems.tooManyItems(max),
    },
  });
}

/**
 * Items that break the field table in typical ways, answered by the service's own validator: the
 * example shows the exact messages and shape of a real 400.
 */
function invalidItems(resource: BatchResource): unknown[] {
  const broken: Record<string, unknown> = exampleObject(resource.fields, { requiredOnly: true });
  const text = Object.entries(resource.fields).find(
    ([, field]) => field.constructor === TextField && (field as TextField).max < 100,
  );
  if (text) broken[text[0]] = 'X'.repeat((text[1] as TextField).max + 1);
  const decimals = Object.entries(resource.fields).filter(([, field]) => field instanceof DecimalField);
  if (decimals[0]) {
    const field = decimals[0][1] as DecimalField;
    broken[decimals[0][0]] =
      `${'9'.repeat(field.precision - field.scale + 1)}.${'5'.repeat(field.scale + 1)}`;
  }
  if (decimals[1]) broken[decimals[1][0]] = '1,5';
  const integer = Object.entries(resource.fields).find(([, field]) => field instanceof IntegerField);
  if (integer) broken[integer[0]] = 1.5;
  for (const [name, field] of Object.entries(resource.fields)) {
    if (field instanceof ItemsField) {
      const child = exampleObject(field.fields, { requiredOnly: true });
      const firstRequired = Object.keys(child)[1] ?? Object.keys(child)[0]!;
      broken[name] = [{ ...child, [firstRequired]: ' ' }];
    }
  }
  broken.colour = 'red';
  return [{}, 'not an object', broken];
}

function invalidItemsExamples(resource: BatchResource) {
  const examples: Record<string, { summary: string; value: object }> = {
    invalidItems: {
      summary: 'Invalid items: every problem of every item',
      value: problems.invalidItems(validateItems(resource, invalidItems(resource)).errors).body(),
    },
  };
  const reference = resource.reference;
  if (reference !== undefined) {
    const item = exampleObject(resource.fields, { requiredOnly: true });
    const batch = validateItems(resource, [item]);
    markUnknownReferences(resource, batch, new Set([item[reference.name] as string]));
    examples.unknownProduct = {
      summary: `${reference.name}: ${reference.message}`,
      value: problems.invalidItems(batch.errors).body(),
    };
  }
  return examples;
}

function description(resource: BatchResource): string {
  const noun = resource.name.replace(/-/g, ' ');
  const key = resource.key.join(' + ');
  const existing =
    resource.onExisting === 'update'
      ? `An item whose key (${key}) exists replaces the stored record (an optional field left out becomes null); ` +
        'a key repeated within the batch: the last occurrence wins.'
      : `An item whose key (${key}) exists is ignored, not an error; a key repeated within the batch: the first ` +
        'occurrence wins.';
  const reference = resource.reference;
  const product =
    reference === undefined
      ? ''
      : `\n\n\`${reference.name}\` must name an existing \`${reference.column}\` of ${reference.table} ` +
        `(POST ${reference.path}).`;
  return (
    `${resource.summary}.\n\n` +
    `Body: a JSON array of 1 to ${MAX_BATCH_ITEMS} ${noun} objects (at most 1000 recommended), at most ` +
    `${resource.bodyLimit} bytes (x-body-limit). Every item is checked before anything is written: one ` +
    'invalid item refuses the whole batch (400, with every problem of every item). A field missing, null or ' +
    'of only white space counts as absent. Text is case-sensitive; lengths count characters (code points).\n\n' +
    `${existing}${product}\n\nSuccess: 201 "${resource.message}" with the counts.\n\n` +
    "outcomes=true lists each item's outcome; dry_run=true validates and counts without writing (200); " +
    'on_invalid=skip writes the valid items and reports the others. An Idempotency-Key makes the request ' +
    'safe to send again.'
  );
}

/** The 201 plain, with outcomes=true, and with on_invalid=skip. */
function createdExamples(resource: BatchResource, created: Record<string, unknown>): OpenApiObject {
  const key = exampleObject(resource.fields, { requiredOnly: true });
  const keyOf = (item: Record<string, unknown>) =>
    Object.fromEntries(resource.key.map((name) => [name, item[name]]));
  const items = [
    { index: 0, key: keyOf(key), outcome: 'created' },
    { index: 1, key: keyOf(key), outcome: 'ignored', duplicateOf: 0 },
  ];
  if (resource.onExisting === 'update') {
    items[0]!.outcome = 'ignored';
    items[0]!.duplicateOf = 1;
    items[1] = { index: 1, key: keyOf(key), outcome: 'created' };
  }
  const rejected = validateItems(resource, [{}]).errors.map((error) => ({ ...error, index: 1 }));
  return {
    counts: { summary: 'The counts', value: created },
    outcomes: {
      summary: 'outcomes=true: a key sent twice',
      value: { ...created, created: 1, updated: 0, ignored: 1, items },
    },
    skipped: {
      summary: 'on_invalid=skip: one item left out',
      value: { ...created, created: 1, updated: 0, ignored: 0, rejected: 1, errors: rejected },
    },
  };
}

function operation(resource: BatchResource): OpenApiObject {
  const created = {
    statusCode: 201,
    message: resource.message,
    created: 2,
    updated: resource.onExisting === 'update' ? 1 : 0,
    ignored: resource.onExisting === 'ignore' ? 1 : 0,
  };
  return {
    tags: ['Batch upload'],
    operationId: `create${pascalCase(resource.name)}`,
    summary: resource.summary,
    description: description(resource),
    security: apiSecurity,
    'x-body-limit': resource.bodyLimit,
    parameters: [idempotencyKeyHeader, ...parametersIn('query', batchQuery)],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_BATCH_ITEMS,
            items: schemaRef(inputSchemaName(resource)),
          },
          examples: {
            minimal: {
              summary: 'Required fields only',
              value: [exampleObject(resource.fields, { requiredOnly: true })],
            },
            complete: {
              summary: 'Every field',
              value: [exampleObject(resource.fields, { requiredOnly: false })],
            },
          },
        },
      },
    },
    responses: {
      '200': {
        description: 'dry_run=true: the batch is valid; nothing was written.',
        headers: replayedHeader,
        content: {
          'application/json': {
            schema: schemaRef('BatchValidated'),
            example: { ...created, statusCode: 200, message: 'Validation passed' },
          },
        },
      },
      '201': {
        description: `Written: "${resource.message}" with the counts.`,
        headers: replayedHeader,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              allOf: [schemaRef('BatchCreated')],
              properties: { message: { const: resource.message } },
            },
            examples: createdExamples(resource, created),
          },
        },
      },
      '400': {
        description:
          'Invalid JSON, an array rule broken, or invalid items (nothing was written); or a malformed ' +
          'Idempotency-Key or query parameter (nothing was read).',
        headers: replayedHeader,
        content: {
          'application/json': {
            schema: { oneOf: [schemaRef('BatchErrors'), schemaRef('ParameterErrors')] },
            examples: {
              ...invalidItemsExamples(resource),
              ...arrayRuleExamples(),
              ...invalidKeyExample,
              ...problemExamples({
                invalidParameter: {
                  summary: 'Unknown value of a batch parameter',
                  problem: problems.invalidBatchParameter('dry_run', 'Parameter must be one of false, true'),
                },
              }),
            },
          },
        },
      },
      ...idempotencyResponses,
      '401': responseRef('Unauthorized'),
      '429': responseRef('TooManyRequests'),
      '413': bodyTooLargeResponse(resource.bodyLimit),
      '415': responseRef('UnsupportedMediaType'),
      '500': responseRef('ServerError'),
    },
  };
}

/** POST /api/<resource>/batch-create for every field table. */
export function batchPaths(resources: readonly BatchResource[]): Record<string, OpenApiObject> {
  return Object.fromEntries(resources.map((resource) => [resource.path, { post: operation(resource) }]));
}
