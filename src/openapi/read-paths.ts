import { listParamRules } from '../read/list-params.js';
import { pageEnvelope } from '../read/page-envelope.js';
import type { ListResource } from '../resources/list-resource.js';
import { listResources } from '../resources/lists.js';
import { listRoute } from '../routes/v1/list-schemas.js';
import { deliveryStatePaths, deliveryStateSchemas } from './delivery-state-paths.js';
import { exampleObject, objectSchema } from './field-schemas.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';
import { parameterErrorExample } from './query-parameters.js';
import { declaredPaths, type OperationAnswers } from './route-operations.js';

/**
 * The objects the lists show (and their items), from the field tables that load them
 * (src/sql/select-list.ts); lists of the same source share one.
 */
function listedSchemas(): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  for (const list of listResources) {
    const { source, items, openapi } = list;
    const itemsSchema = openapi.itemsSchema;
    const context = {
      direction: 'response' as const,
      childSchema: () => schemaRef(itemsSchema?.name ?? ''),
    };
    schemas[openapi.schema.name] ??= objectSchema(list.shown, context, {
      description: openapi.schema.description,
      // A list's shown system columns are set on every row it lists (a rejection's date and reason).
      alwaysSet: [...Object.keys(source.insertDefaults ?? {}), ...(list.shows ?? [])],
    });
    if (items && itemsSchema) {
      schemas[itemsSchema.name] ??= objectSchema(items.field.fields, context, {
        description: itemsSchema.description,
      });
    }
  }
  return schemas;
}

/** The schemas of the read endpoints' answers. */
export function readSchemas(): Record<string, JsonSchema> {
  return {
    ...listedSchemas(),
    PageMeta: {
      type: 'object',
      description: 'Where this page lies in the list. totalPages is 0 when nothing matches.',
      required: ['totalItems', 'itemCount', 'itemsPerPage', 'totalPages', 'currentPage'],
      properties: {
        totalItems: { type: 'integer', minimum: 0, description: 'records matching the filters' },
        itemCount: { type: 'integer', minimum: 0, description: 'records on this page' },
        itemsPerPage: { type: 'integer', minimum: 1, description: 'the requested limit' },
        totalPages: { type: 'integer', minimum: 0 },
        currentPage: { type: 'integer', minimum: 1 },
      },
    },
    PageLinks: {
      type: 'object',
      description:
        'Absolute URLs keeping every filter and the sort of the request, with page and limit last. prev is ' +
        'null on the first page, next on the last (and past it).',
      required: ['self', 'first', 'last', 'prev', 'next'],
      properties: {
        self: { type: 'string', format: 'uri' },
        first: { type: 'string', format: 'uri' },
        last: { type: 'string', format: 'uri', description: 'page 1 when nothing matches' },
        prev: { type: ['string', 'null'], format: 'uri' },
        next: { type: ['string', 'null'], format: 'uri' },
      },
    },
    ...deliveryStateSchemas(),
  };
}

const pageSchema = (item: string): JsonSchema => ({
  type: 'object',
  required: ['data', 'meta', 'links'],
  properties: {
    data: { type: 'array', items: schemaRef(item) },
    meta: schemaRef('PageMeta'),
    links: schemaRef('PageLinks'),
  },
});

/** What GET <list.path> answers: one page, every problem with its parameters. */
function listAnswers(list: ListResource): OperationAnswers {
  const rules = listParamRules(list);
  const sort = rules.sort;
  const filters = sort?.kind === 'choice' ? { sort: sort.default } : {};
  const envelope = pageEnvelope(`https://backoffice.example.com${list.path}`, filters, 2, 100, 250, 100);
  return {
    responses: {
      '200': {
        description: 'One page.',
        content: {
          'application/json': {
            schema: pageSchema(list.openapi.schema.name),
            example: { data: [exampleObject(list.shown, { requiredOnly: false })], ...envelope },
          },
        },
      },
      '400': {
        description: 'Invalid query parameters, every problem at once.',
        content: {
          'application/json': { schema: schemaRef('ParameterErrors'), example: parameterErrorExample(rules) },
        },
      },
      '401': responseRef('Unauthorized'),
      '429': responseRef('TooManyRequests'),
      '500': responseRef('ServerError'),
      '503': responseRef('DatabaseUnavailable'),
    },
  };
}

/** backoffice-api.md 4.1, 4.2; extensions.md 4 and 6: every list, then the acknowledgement. */
export function readPaths(): Record<string, OpenApiObject> {
  const answers = Object.fromEntries(
    listResources.map((list) => [list.openapi.operationId, listAnswers(list)]),
  );
  return { ...declaredPaths(listResources.map(listRoute), answers), ...deliveryStatePaths() };
}
