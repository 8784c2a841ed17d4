import { CHANGES_PATH, changesParamRules } from '../../feed/params.js';
import { querySchema, type RouteDeclaration } from '../../http/route-schema.js';

/*
 * GET /v1/changes (extensions.md 10), declared once: the query string from the feed's rules
 * (src/feed/params.ts, one rule in one place), checked by the handler (changesQuery) and shown by
 * the document. `resource` is required: the rules cannot say it, the declaration does.
 */

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

export const changesRoute = {
  method: 'GET',
  url: CHANGES_PATH,
  schema: {
    operationId: 'listChanges',
    tags: ['Read'],
    summary: 'Changes of one resource, in commit order, after a cursor',
    description: DESCRIPTION,
    querystring: querySchema(changesParamRules, MEANINGS, ['resource']),
  },
} as const satisfies RouteDeclaration;
