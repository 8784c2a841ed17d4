/** A JSON Schema 2020-12 object, as OpenAPI 3.1 uses them. */
export type JsonSchema = { [keyword: string]: unknown };

/** A reference to a schema of components.schemas (the document holds each named schema once). */
export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** Which side of the API a schema describes: what a batch request may send, or what a response holds. */
export type Direction = 'request' | 'response';

/** What a field type needs from the document it is described in. */
export interface SchemaContext {
  direction: Direction;
  /**
   * The $ref schema of the child objects of the items field being described (the document names and
   * places it; a table has at most one items field).
   */
  childSchema(): JsonSchema;
}
