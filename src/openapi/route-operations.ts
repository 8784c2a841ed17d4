import type { TObject, TSchema } from 'typebox';
import type { RouteDeclaration } from '../http/route-schema.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';
import { apiSecurity } from './security.js';

/*
 * The document's operations read from the routes' declarations (src/http/route-schema.ts): identity,
 * path and query parameters, body. What a route answers is the document's own: `documented` adds it.
 */

/** What the document says of an operation beyond its declaration. */
export interface OperationAnswers {
  responses: OpenApiObject;
  /** Header parameters (Idempotency-Key), after the declared ones. */
  parameters?: OpenApiObject[];
  requestExample?: unknown;
  /** The body shown as this component (the caller lists it) rather than inline. */
  bodyComponent?: string;
  /** Who may call it: the API's two schemes unless said otherwise (POST /token: anyone). */
  security?: OpenApiObject[];
}

/**
 * A declared schema as the document shows it: without the messages its check reads, and with the
 * keywords a declaration says to the document only (`documentOnly`, which the check never sees).
 */
export function publicSchema(schema: TSchema): JsonSchema {
  return JSON.parse(
    JSON.stringify(schema, (key, value) => {
      if (key === 'errorMessage') return undefined;
      if (typeof value === 'object' && value !== null && 'documentOnly' in value) {
        const { documentOnly, ...rest } = value as { documentOnly: object };
        return { ...rest, ...documentOnly };
      }
      return value;
    }),
  );
}

/** A declared query string or path parameters as the document's parameters. */
export function parametersIn(where: 'path' | 'query', object: TObject | undefined): OpenApiObject[] {
  if (!object) return [];
  const required: readonly string[] = object.required ?? [];
  return Object.entries(object.properties).map(([name, property]) => {
    const { description, ...schema } = publicSchema(property) as { description?: string };
    return {
      name,
      in: where,
      required: where === 'path' || required.includes(name),
      ...(description === undefined ? {} : { description }),
      schema,
    };
  });
}

/** `/v1/webhooks/:id` -> `/v1/webhooks/{id}`. */
export const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/** The paths of declared routes, each operation completed by its answers (by operationId). */
export function declaredPaths(
  declarations: readonly RouteDeclaration[],
  documented: Readonly<Record<string, OperationAnswers>>,
): Record<string, OpenApiObject> {
  const paths: Record<string, Record<string, OpenApiObject>> = {};
  for (const { method, url, bodyLimit, schema } of declarations) {
    const answers = documented[schema.operationId];
    if (!answers) throw new Error(`openapi: no answers documented for ${schema.operationId}`);
    const parameters = [
      ...parametersIn('path', schema.params),
      ...parametersIn('query', schema.querystring),
      ...(answers.parameters ?? []),
    ];
    const body =
      schema.body && (answers.bodyComponent ? schemaRef(answers.bodyComponent) : publicSchema(schema.body));
    const example = answers.requestExample === undefined ? {} : { example: answers.requestExample };
    const content = Object.fromEntries(
      (schema.consumes ?? ['application/json']).map((type) => [type, { schema: body, ...example }]),
    );
    const path = openApiPath(url);
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = {
      tags: schema.tags,
      operationId: schema.operationId,
      summary: schema.summary,
      ...(schema.description === undefined ? {} : { description: schema.description }),
      security: answers.security ?? apiSecurity,
      ...(bodyLimit === undefined ? {} : { 'x-body-limit': bodyLimit }),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(body ? { requestBody: { required: true, content } } : {}),
      responses: answers.responses,
    };
  }
  return paths;
}
