import {
  ChoiceField,
  DateTimeField,
  DecimalField,
  type Field,
  IntegerField,
  ItemsField,
  TextField,
  TimeOfDayField,
} from '../fields/field.js';
import type { JsonSchema } from './json-schema.js';

/** yyyy-MM-ddTHH:mm:ss, no zone; the service also checks that the date exists (no February 30). */
export const DATE_TIME_PATTERN =
  '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d$';
/** HH:MM, 00:00 to 23:59 (the TimeOfDayField rule). */
export const TIME_OF_DAY_PATTERN = '^([01]\\d|2[0-3]):[0-5]\\d$';
/** A required text must hold something other than white space (docs/decisions.md: empty means absent). */
const NOT_BLANK = '\\S';

/**
 * A numeric string a Decimal(precision, scale) accepts: the plain form (an optional sign, digits, one
 * optional point; white space around ignored), counted as the service counts, without leading zeros of
 * the integer part and trailing zeros of the fraction.
 */
export function decimalStringPattern(precision: number, scale: number): string {
  const integerDigits = precision - scale;
  const integer = integerDigits > 0 ? `0*\\d{1,${integerDigits}}` : '0+';
  const fraction = `\\d{0,${scale}}0*`;
  return `^\\s*[+-]?(?:${integer}(?:\\.${fraction})?|\\.(?=\\d)${fraction})\\s*$`;
}

/** A string an IntegerField accepts: an integer in the plain decimal form ("4", "-2", "4.0"). */
export const INTEGER_STRING_PATTERN = '^\\s*[+-]?(?:\\d+(?:\\.0*)?|\\.0+)\\s*$';

/** Which side of the API a schema describes: what a batch request may send, or what a response holds. */
export type Direction = 'request' | 'response';

export interface SchemaContext {
  direction: Direction;
  /** The $ref schema of the child objects of an items field. */
  childSchema(field: ItemsField): JsonSchema;
}

const decimalName = (field: DecimalField) => `Decimal(${field.precision},${field.scale})`;
const range = (min: number | undefined, max: number | undefined) =>
  min !== undefined && max !== undefined ? `, from ${min} to ${max}` : '';

/** A value of the field that the service accepts, for examples (tests check that it is accepted). */
export function exampleValue(name: string, field: Field): unknown {
  if (field instanceof ItemsField) {
    return [exampleObject(field.fields, { requiredOnly: false })];
  }
  if (field instanceof ChoiceField) return field.values[0];
  if (field instanceof TimeOfDayField) return '08:00';
  if (field instanceof TextField) return name.toUpperCase().slice(0, field.max);
  if (field instanceof DateTimeField) return '2026-01-10T08:00:00';
  if (field instanceof IntegerField) return Math.max(field.min, Math.min(field.max, 1));
  if (field instanceof DecimalField) {
    const integer = field.precision - field.scale >= 4 ? '1500' : '1';
    const fraction = field.scale > 0 ? `.${'25'.slice(0, field.scale)}` : '';
    let value = Number(integer + fraction);
    if (field.max !== undefined) value = Math.min(value, field.max);
    if (field.min !== undefined) value = Math.max(value, field.min);
    return value;
  }
  return null;
}

/** An object of example values: every field, or only the required ones. */
export function exampleObject(
  table: Readonly<Record<string, Field>>,
  options: { requiredOnly: boolean },
): Record<string, unknown> {
  const example: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(table)) {
    if (options.requiredOnly && !field.required) continue;
    example[name] = exampleValue(name, field);
  }
  return example;
}

/** The sentence after a field's own description: what its type accepts or holds. */
function typeNote(field: Field, direction: Direction): string {
  if (field instanceof DecimalField) {
    const name = decimalName(field);
    const integerDigits = field.precision - field.scale;
    return direction === 'request'
      ? `${name}: a JSON number or a numeric string such as "12.50" (no exponent, no thousands separator), ` +
          `at most ${integerDigits} integer digits and ${field.scale} decimal places${range(field.min, field.max)}`
      : `${name}, a JSON number with every stored digit`;
  }
  if (field instanceof IntegerField) {
    return direction === 'request'
      ? `integer from ${field.min} to ${field.max}: a JSON integer or a string holding one`
      : '';
  }
  if (field instanceof DateTimeField) return 'yyyy-MM-ddTHH:mm:ss, no time zone';
  if (field instanceof TimeOfDayField) return 'HH:MM, 00:00 to 23:59';
  if (field instanceof ItemsField && direction === 'request') {
    return `at most ${field.maxItems} objects; ${field.key} unique within one record`;
  }
  return '';
}

function description(field: Field, direction: Direction): string {
  const parts = [field.description, typeNote(field, direction)];
  if (direction === 'request' && field.defaultValue !== null && !(field instanceof ItemsField)) {
    parts.push(`default ${JSON.stringify(field.defaultValue)}`);
  }
  return parts.filter((part) => part !== '').join('; ');
}

/** The schema of a value of the field, without null (added by the caller where a value may be null). */
function valueSchema(name: string, field: Field, context: SchemaContext): JsonSchema {
  const request = context.direction === 'request';
  if (field instanceof ItemsField) {
    return { type: 'array', maxItems: field.maxItems, items: context.childSchema(field) };
  }
  if (field instanceof ChoiceField) return { type: 'string', enum: [...field.values] };
  if (field instanceof TimeOfDayField) return { type: 'string', pattern: TIME_OF_DAY_PATTERN };
  if (field instanceof TextField) {
    const schema: JsonSchema = { type: 'string', maxLength: field.max };
    if (request && field.required) schema.pattern = NOT_BLANK;
    return schema;
  }
  if (field instanceof DateTimeField) return { type: 'string', pattern: DATE_TIME_PATTERN };
  if (field instanceof IntegerField) {
    const number = { type: 'integer', minimum: field.min, maximum: field.max };
    if (!request) return number;
    return { oneOf: [number, { type: 'string', pattern: INTEGER_STRING_PATTERN }] };
  }
  if (field instanceof DecimalField) {
    const bounds: JsonSchema = {};
    if (field.min !== undefined) bounds.minimum = field.min;
    if (field.max !== undefined) bounds.maximum = field.max;
    if (!request) return { type: 'number', ...bounds };
    const limit = 10 ** (field.precision - field.scale);
    const number: JsonSchema = {
      type: 'number',
      ...(field.min === undefined ? { exclusiveMinimum: -limit } : {}),
      ...(field.max === undefined ? { exclusiveMaximum: limit } : {}),
      ...bounds,
    };
    const text = { type: 'string', pattern: decimalStringPattern(field.precision, field.scale) };
    return { oneOf: [number, text] };
  }
  throw new Error(`no JSON Schema for the field ${name} (${field.constructor.name})`);
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
  const value = valueSchema(name, field, context);
  const schema: JsonSchema = {};
  const text = description(field, context.direction);
  if (text !== '') schema.description = text;
  Object.assign(schema, nullable ? orNull(value) : value);
  if (field instanceof DecimalField) {
    schema['x-precision'] = field.precision;
    schema['x-scale'] = field.scale;
  }
  if (context.direction === 'request' && field.defaultValue !== null) schema.default = field.defaultValue;
  schema.examples = [exampleValue(name, field)];
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
