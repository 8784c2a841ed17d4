import type { Direction, JsonSchema, SchemaContext } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import type { Random } from './random.js';
import type { Reference } from './reference.js';

/** PostgreSQL type of the array parameter a column is sent in (unnest($n::type[])). */
export type SqlType = 'text' | 'numeric' | 'integer' | 'timestamp';
/** A normalised value: text and decimals as strings, integers as numbers; child rows for items. */
export type FieldValue = string | number | null | FieldValue[][];

/** Every field type, by name: tests that compare a type with its own copy of the spec switch on it. */
export type FieldKind = 'text' | 'choice' | 'timeOfDay' | 'decimal' | 'integer' | 'dateTime' | 'items';

/** The column a migration must declare for a field, in information_schema.columns' words. */
export interface ColumnType {
  data_type: string;
  character_maximum_length?: number;
  numeric_precision?: number;
  numeric_scale?: number;
}

export interface Common {
  required?: boolean;
  description?: string;
  /** Value stored when the field is absent (also for required: false only). */
  default?: FieldValue;
}

/** Empty or only white space; only a string that starts with white space needs the trim. */
function isBlank(text: string): boolean {
  if (text.length === 0) return true;
  // Printable ASCII other than the space is never white space: no regular expression for it.
  const first = text.charCodeAt(0);
  if (first > 32 && first < 127) return false;
  return /\s/.test(text[0]!) && text.trim() === '';
}

/**
 * One field of a field table: how a JSON value is checked and normalised, and how it is stored.
 * Absent means missing, null, or a string of only white space; a required field that is absent gets
 * "Field is required", an optional one its default (null unless said otherwise).
 *
 * Each field type also describes itself to the rest of the service, so that a new type is one new
 * class: its JSON Schema and example (the OpenAPI document), its generator (the seeded data sets), its
 * SQL select expression (the read side) and its column (the migration, checked by a test).
 */
export abstract class Field {
  abstract readonly kind: FieldKind;
  readonly required: boolean;
  readonly description: string;
  readonly defaultValue: FieldValue;
  abstract readonly sqlType: SqlType;
  /** Longest JSON text a valid value can take (UTF-8 bytes), for the request body limit. */
  abstract readonly maxJsonBytes: number;
  /** The other resource's key this field's value must name, if any. */
  readonly references: Reference | undefined = undefined;
  /** Stored in a column of the resource's table (an items field has a table of its own). */
  readonly isColumn: boolean = true;

  constructor(options: Common) {
    this.required = options.required ?? false;
    this.description = options.description ?? '';
    this.defaultValue = options.default ?? null;
  }

  /** The value to store, or undefined with the reasons pushed onto errors. */
  check(value: unknown, errors: string[]): FieldValue | undefined {
    if (value === undefined || value === null || (typeof value === 'string' && isBlank(value))) {
      if (!this.required) return this.defaultValue;
      errors.push(m.required);
      return undefined;
    }
    return this.checkPresent(value, errors);
  }

  protected abstract checkPresent(value: unknown, errors: string[]): FieldValue | undefined;

  /** The JSON Schema of a present value (without null: the document adds it where a value may be null). */
  abstract valueSchema(context: SchemaContext): JsonSchema;

  /** The sentence after the field's own description in the document: what its type accepts or holds. */
  typeNote(_direction: Direction): string {
    return '';
  }

  /** The document's words for the default a request may leave out ('' for none worth saying). */
  defaultNote(): string {
    return this.defaultValue === null ? '' : `default ${JSON.stringify(this.defaultValue)}`;
  }

  /** Keywords of the document's own (x-...) the field's schema carries beside its value schema. */
  schemaExtensions(): JsonSchema {
    return {};
  }

  /** A value the service accepts, for the document's examples (name: the field's name, for text). */
  abstract example(name: string): unknown;

  /**
   * A random value that fits the field, for seeded data sets: at is the item's own time (epoch ms),
   * around which dates are drawn.
   */
  abstract generate(rng: Random, at: number): unknown;

  /**
   * The SQL expression a read selects for the field's column (column: the qualified, quoted column),
   * as the API writes the value; undefined for a field that is not a column.
   */
  selectExpression(column: string): string | undefined {
    return column;
  }

  /** The column the migration declares; undefined for a field that is not a column. */
  abstract readonly columnType: ColumnType | undefined;
}
