import type { JsonSchema } from './json-schema.js';
import { responseRef, schemaRef } from './json-schema.js';

/*
 * What the paths of the management APIs (webhooks, extensions.md 11; bulk jobs, 12) share: common
 * answers, a JSON content, the refusals' bodies.
 */

/** A timestamp as the management APIs write it (UTC, to the second). */
export const DATE_TIME = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$' };

export const json = (schema: JsonSchema, example?: unknown) => ({
  'application/json': example === undefined ? { schema } : { schema, example },
});

/** An answer of status `status` whose body is one message (`Problem`). */
export const problemResponse = (description: string, status: number, message: string) => ({
  description,
  content: json(schemaRef('Problem'), { statusCode: status, errors: [{ message }] }),
});

/** A 400 naming the refused field (`FieldErrors`). */
export const fieldErrorsResponse = (description: string, field: string, message: string) => ({
  description,
  content: json(schemaRef('FieldErrors'), { statusCode: 400, errors: [{ field, message }] }),
});

/** The answers every management operation may give. */
export const commonResponses = {
  '401': responseRef('Unauthorized'),
  '429': responseRef('TooManyRequests'),
  '500': responseRef('ServerError'),
  '503': responseRef('DatabaseUnavailable'),
};
