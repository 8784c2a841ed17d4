import Type, { type TObject, type TSchema } from 'typebox';
import type { ParamRule } from '../read/query-params.js';

/*
 * A route's declaration, in the form Fastify and @fastify/swagger read (`schema` on the route):
 * what identifies the operation, and its body, query string and path parameters as TypeBox schemas.
 * The route takes it, its handler checks the request by it (src/fields/body-check.ts), and the
 * OpenAPI document is assembled from it (src/openapi/route-operations.ts).
 */

export interface RouteSchema {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  body?: TSchema;
  /** The body's media types, @fastify/swagger's key (JSON alone when absent). */
  consumes?: string[];
  querystring?: TObject;
  params?: TObject;
}

export interface RouteDeclaration {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify's form: `/v1/webhooks/:id`. */
  url: string;
  /** The most bytes its body may have (the route's bodyLimit; the document's x-body-limit). */
  bodyLimit?: number;
  schema: RouteSchema;
}

/** The {id} of a management resource: any text, an unknown one answers 404. */
export const idParams = Type.Object({ id: Type.String() });

function schemaOf(rule: ParamRule): TSchema {
  switch (rule.kind) {
    case 'text':
      return Type.String({ minLength: 1, maxLength: rule.max });
    case 'date':
      return Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' });
    case 'integer':
      return Type.Integer({
        minimum: rule.min,
        ...(rule.max === undefined ? {} : { maximum: rule.max }),
        default: rule.default,
      });
    case 'choice':
      // As the read side always documented it: a string, one of the values.
      return Type.Unsafe<string>({ type: 'string', enum: [...rule.values], default: rule.default });
  }
}

function ruleText(rule: ParamRule): string {
  switch (rule.kind) {
    case 'text':
      return `at most ${rule.max} characters`;
    case 'date':
      return 'a date YYYY-MM-DD';
    case 'integer':
      return `${rule.max === undefined ? `at least ${rule.min}` : `${rule.min} to ${rule.max}`}, default ${rule.default}`;
    case 'choice':
      // A required choice (the feed's resource) has no default to name.
      return `one of ${rule.values.join(', ')}${rule.default === '' ? '' : `, default ${rule.default}`}`;
  }
}

/**
 * A query string's schema from the rules that check it (src/read/query-params.ts, one rule in one
 * place): schema and limits from the rule, the meaning from meanings. A required parameter (the
 * feed's resource, checked first by its own query) shows no default. Other parameters are refused
 * (checkQuery) unless `others` says the check ignores them (the batch endpoints' options).
 */
export function querySchema(
  rules: Readonly<Record<string, ParamRule>>,
  meanings: Readonly<Record<string, string>> = {},
  required: readonly string[] = [],
  others: 'refused' | 'ignored' = 'refused',
): TObject {
  const properties = Object.fromEntries(
    Object.entries(rules).map(([name, rule]) => {
      const { default: _default, ...withoutDefault } = schemaOf(rule) as TSchema & { default?: unknown };
      const schema = {
        ...(required.includes(name) ? withoutDefault : schemaOf(rule)),
        description: [meanings[name], ruleText(rule)].filter(Boolean).join('; '),
      };
      return [name, required.includes(name) ? schema : Type.Optional(schema)];
    }),
  );
  return Type.Object(properties, { additionalProperties: others === 'ignored' });
}

/**
 * The route option that leaves a declared schema to the handler's own check (checkBody, checkQuery):
 * Fastify's validation would run before the Idempotency-Key's work and answer in its own shape.
 */
export const checkedByHandler = () => () => true;
