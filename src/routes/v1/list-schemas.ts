import { querySchema, type RouteDeclaration } from '../../http/route-schema.js';
import { listParamRules, sortFieldsOf } from '../../read/list-params.js';
import type { ListResource } from '../../resources/list-resource.js';

/*
 * The read side's list routes (backoffice-api.md 4.1, 4.2; extensions.md 6), each declared from its
 * list: identity from the list's declaration, the query string from its rules (src/read/list-params.ts,
 * one rule in one place), checked by the handler (checkQuery) and shown by the document.
 */

const PARAMETER_RULES =
  'Every parameter is optional. An unknown, repeated or empty parameter, or a value out of its rule, is a ' +
  '400 naming the parameter; nothing is clamped.';

/** What a list's parameters mean, beyond its declared filters. */
const PAGING_MEANINGS = { page: 'page number, from 1', limit: 'page size' };

function meaningsOf(list: ListResource): Record<string, string> {
  const meanings: Record<string, string> = {};
  for (const [name, filter] of Object.entries(list.filters)) meanings[name] = filter.meaning;
  meanings.sort = sortFieldsOf(list)
    .map((name) => `${name} ascending or -${name} descending`)
    .join('; ');
  return Object.assign(meanings, PAGING_MEANINGS);
}

/** GET <list.path>. */
export const listRoute = (list: ListResource) =>
  ({
    method: 'GET',
    url: list.path,
    schema: {
      operationId: list.openapi.operationId,
      tags: ['Read'],
      summary: list.openapi.summary,
      description: `${list.openapi.description}\n\n${PARAMETER_RULES}`,
      querystring: querySchema(listParamRules(list), meaningsOf(list)),
    },
  }) satisfies RouteDeclaration;
