import { type JsonSchema, schemaRef } from '../fields/json-schema.js';

/** A JSON Schema 2020-12 object, as OpenAPI 3.1 uses them (field types give theirs: src/fields). */
export type { JsonSchema };

/** An OpenAPI object (operation, response, parameter, ...), kept loose: the test validates the document. */
export type OpenApiObject = { [key: string]: unknown };

export { schemaRef };

/** A reference to a response of components.responses. */
export const responseRef = (name: string): OpenApiObject => ({ $ref: `#/components/responses/${name}` });

/** 'payment-methods' -> 'PaymentMethods'. */
export function pascalCase(name: string): string {
  return name
    .split(/[-_\s]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}

/** 'deliveries' -> 'delivery', 'stocks' -> 'stock': enough for the resource names of this service. */
export function singular(name: string): string {
  if (name.endsWith('ies')) return `${name.slice(0, -3)}y`;
  return name.endsWith('s') ? name.slice(0, -1) : name;
}
