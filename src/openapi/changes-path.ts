import { encodeCursor } from '../feed/cursor.js';
import { AFTER_MESSAGE } from '../feed/params.js';
import { HttpProblem } from '../http/problems.js';
import { type FeedResource, feedResources } from '../resources/feed.js';
import { changesRoute } from '../routes/v1/changes-schemas.js';
import { exampleObject, objectSchema } from './field-schemas.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { declaredPaths } from './route-operations.js';

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

/** GET /v1/changes: what it takes is declared on its route (src/routes/v1/changes-schemas.ts). */
export function changesPath(): Record<string, OpenApiObject> {
  const [first] = feedResources;
  const example = {
    data: [exampleObject({ ...first!.source.fields, ...first!.extra }, { requiredOnly: false })],
    next: encodeCursor(first!.name, { xid: '1052', key: ['P-1'] }, '1764000000000000'),
    hasMore: false,
  };
  return declaredPaths([changesRoute], {
    listChanges: {
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
        '503': responseRef('DatabaseUnavailable'),
      },
    },
  });
}
