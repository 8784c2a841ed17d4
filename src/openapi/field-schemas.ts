import { exampleObject } from '../fields/example.js';
import type { Field } from '../fields/field.js';
import type { Direction, JsonSchema, SchemaContext } from '../fields/json-schema.js';

// Each field type gives its own value schema, type note, default note and example (src/fields/*.ts):
// this module only assembles them into the document's property and object schemas.
export type { SchemaContext } from '../fields/json-schema.js';
export { exampleObject };

/** The field's own description, what its type accepts or holds, and (requests) its default. */
function description(field: Field, direction: Direction): string {
  const parts = [field.description, field.typeNote(direction)];
  if (direction === 'request') parts.push(field.defaultNote());
  return parts.filter((part) => part !== '').join('; ');
}

/** Adds null to the values a schema allows. */
function orNull(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.oneOf)) return { ...schema, oneOf: [...schema.oneOf, { type: 'null' }] };
  const withNull: JsonSchema = { ...schema, type: [schema.type, 'null'] };
  if (Array.isArray(schema.enum)) withNull.enum = [...schema.enum, null];
  return withNull;
}

/**
 * The schema of one field. Requests: an optional field may be null (absent). Responses: nullable
 * says whether the stored value may be null.
 */
export function fieldSchema(
  name: string,
  field: Field,
  context: SchemaContext,
  nullable: boolean,
): JsonSchema {
  const value = field.valueSchema(context);
  const schema: JsonSchema = {};
  const text = description(field, context.direction);
  if (text !== '') schema.description = text;
  Object.assign(schema, nullable ? orNull(value) : value, field.schemaExtensions());
  if (context.direction === 'request' && field.defaultValue !== null) schema.default = field.defaultValue;
  schema.examples = [field.example(name)];
  return schema;
}

/**
 * The schema of an object of a field table. Requests: the required fields, nothing unknown.
 * Responses: every field always present; null where the service may store null (neither required,
 * nor defaulted by the field table, nor set by the system on insert: alwaysSet).
 */
export function objectSchema(
  table: Readonly<Record<string, Field>>,
  context: SchemaContext,
  options: { description: string; alwaysSet?: readonly string[] },
): JsonSchema {
  const request = context.direction === 'request';
  const alwaysSet = new Set(options.alwaysSet ?? []);
  const properties: Record<string, JsonSchema> = {};
  for (const [name, field] of Object.entries(table)) {
    const nullable = request
      ? !field.required
      : !field.required && field.defaultValue === null && !alwaysSet.has(name);
    properties[name] = fieldSchema(name, field, context, nullable);
  }
  const names = Object.keys(table);
  return {
    type: 'object',
    description: options.description,
    required: request ? names.filter((name) => table[name]!.required) : names,
    properties,
    ...(request ? { additionalProperties: false } : {}),
  };
}
