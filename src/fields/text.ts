import { type ColumnType, type Common, Field } from './field-type.js';
import type { JsonSchema, SchemaContext } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { int, pick, type Random } from './random.js';
import type { Reference } from './reference.js';

export interface TextOptions extends Common {
  max: number;
  /** The value must name a row of another resource by its key (e.g. a product by its code). */
  references?: Reference;
}

/** A required text must hold something other than white space (docs/decisions/0001-empty-means-absent.md). */
const NOT_BLANK = '\\S';
/** Words of generated free text: enough variety for lengths and indexes, readable in a data set. */
const WORDS = ['norte', 'sur', 'centro', 'bodega', 'pedido', 'cliente', 'ruta', 'zona', 'entrega', 'pago'];

/** Code points, not UTF-16 units: "exceeds maximum length" counts characters as people do. */
function characterCount(text: string, max: number): number {
  // Fast path: a string of at most max UTF-16 units has at most max code points.
  if (text.length <= max) return text.length;
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** Up to max characters of text: one to five words. */
function words(rng: Random, max: number): string {
  let text = pick(rng, WORDS);
  const count = int(rng, 0, 4);
  for (let w = 0; w < count; w++) text += ` ${pick(rng, WORDS)}`;
  return text.slice(0, max);
}

/** A string of at most max characters (varchar(max)). */
export class TextField extends Field {
  readonly kind: 'text' | 'choice' | 'timeOfDay' = 'text';
  readonly sqlType = 'text';
  readonly max: number;
  override readonly references: Reference | undefined;
  /** Every character as a six-byte \\uXXXX escape: what Python's json.dumps sends by default. */
  get maxJsonBytes() {
    return this.max * 6 + 2;
  }
  get columnType(): ColumnType {
    return { data_type: 'character varying', character_maximum_length: this.max };
  }

  constructor(options: TextOptions) {
    super(options);
    this.max = options.max;
    this.references = options.references;
  }

  protected checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (characterCount(value, this.max) > this.max) {
      errors.push(m.maxLength(this.max));
      return undefined;
    }
    // PostgreSQL text cannot hold U+0000; refusing it here keeps it a 400 instead of a 500.
    if (value.includes('\u0000')) {
      errors.push(m.noNulCharacters);
      return undefined;
    }
    return value;
  }

  valueSchema(context: SchemaContext): JsonSchema {
    const schema: JsonSchema = { type: 'string', maxLength: this.max };
    if (context.direction === 'request' && this.required) schema.pattern = NOT_BLANK;
    return schema;
  }

  example(name: string): unknown {
    return name.toUpperCase().slice(0, this.max);
  }

  generate(rng: Random): unknown {
    return words(rng, this.max);
  }
}
