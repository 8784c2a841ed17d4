import { encodeCursor } from '../feed/cursor.js';
import { AFTER_MESSAGE, CHANGES_PATH, changesParamRules } from '../feed/params.js';
import { HttpProblem } from '../http/problems.js';
import { type FeedResource, feedResources } from '../resources/feed.js';
import { exampleObject, objectSchema } from './field-schemas.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { queryParameters } from './query-parameters.js';
import { apiSecurity } from './security.js';

/** One record of a feed resource: its fields (its list's when it has one) and the feed's dates. */
function changeSchema(feed: FeedResource): JsonSchema {
  const { source, list } = feed;
  const itemsSchema = list?.openapi.itemsSchema?.name;
  return objectSchema(
    { ...source.fields, ...feed.extra },
    { direction: 'response', childSchema: () => schemaRef(itemsSchema ?? '') },
    {
      description: list
        ? `${list.openapi.schema.description} As GET ${list.path} lists it, with ${Object.keys(feed.extra).join(', ')}.`
        : `A record of POST ${source.path}: its fields, created_at and updated_at.`,
      alwaysSet: [...Object.keys(source.insertDefaults ?? {}), ...feed.alwaysSet],
    },
  );
}

/** The record schemas the feed adds (a resource shown exactly as its list shows it reuses the list's). */
export function changesSchemas(): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  for (const feed of feedResources) {
    if (feed.list && feed.schemaName === feed.list.openapi.schema.name) continue;
    schemas[feed.schemaName] = changeSchema(feed);
  }
  return schemas;
}

const DESCRIPTION = `Every record of one resource, in the order its writes committed, then only what changed:
download the whole resource by following \`next\` until \`hasMore\` is false, then poll with the last
\`next\`. A record written again (an upsert, an acknowledgement) moves to the position of its latest write
and appears there with its current values; a page never holds a record twice. No gaps: a write that commits
after an answer appears after that answer's \`next\`, however transactions overlap (a write still in
progress holds back the records after it until it ends). A cursor never expires; an empty page answers the
cursor sent (or, without one, a cursor for the start). Each page costs the same at any depth. Only after
the service's database was restored into another server are cursors from before refused (400 naming
\`after\`): download again without \`after\`.

Records have the shape of their list (customers, deliveries with their items, \`acknowledged_at\`, \`rejected_at\` and \`rejection_reason\`) or,
for master data, their batch fields plus \`created_at\` and \`updated_at\`, with the lists' DateTime and
number formats.`;

const MEANINGS = {
  resource: 'which resource (required)',
  after: 'the next value of an earlier answer for the same resource; absent: from the beginning',
  limit: 'records per page',
};

/** GET /v1/changes, from the feed's declarations and query rules. */
export function changesPath(): Record<string, OpenApiObject> {
  const parameters = queryParameters(changesParamRules, MEANINGS).map((parameter) => {
    if (parameter.name !== 'resource') return parameter;
    // Required, so no default (the rule's default is never used).
    const { default: _unused, ...schema } = parameter.schema as Record<string, unknown>;
    return { ...parameter, required: true, schema };
  });
  const [first] = feedResources;
  const example = {
    data: [exampleObject({ ...first!.source.fields, ...first!.extra }, { requiredOnly: false })],
    next: encodeCursor(first!.name, { xid: '1052', key: ['P-1'] }, '1764000000000000'),
    hasMore: false,
  };
  return {
    [CHANGES_PATH]: {
      get: {
        tags: ['Read'],
        operationId: 'listChanges',
        summary: 'Changes of one resource, in commit order, after a cursor',
        description: DESCRIPTION,
        security: apiSecurity,
        parameters,
        responses: {
          '200': {
            description: 'One page of changes.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['data', 'next', 'hasMore'],
                  properties: {
                    data: {
                      type: 'array',
                      description: 'records of the resource asked for, oldest change first',
                      items: { anyOf: feedResources.map((feed) => schemaRef(feed.schemaName)) },
                    },
                    next: { type: 'string', description: 'the cursor of the next request (after=)' },
                    hasMore: { type: 'boolean', description: 'false: the feed is read to its end for now' },
                  },
                },
                example,
              },
            },
          },
          '400': {
            description:
              'An unknown resource, a bad limit, or a cursor that is malformed or of another resource.',
            content: {
              'application/json': {
                schema: schemaRef('ParameterErrors'),
                example: new HttpProblem(400, [{ field: 'after', message: AFTER_MESSAGE }]).body(),
              },
            },
          },
          '401': responseRef('Unauthorized'),
          '429': responseRef('TooManyRequests'),
          '500': responseRef('ServerError'),
        },
      },
    },
  };
}
