import { readNumeric } from './decimal-text.js';
import { type ColumnType, type Common, Field } from './field-type.js';
import type { Direction, JsonSchema, SchemaContext } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { int, type Random } from './random.js';

export interface IntegerOptions extends Common {
  min: number;
  max: number;
}

const INT32_MAX = 2_147_483_647;
/** A string an IntegerField accepts: an integer in the plain decimal form ("4", "-2", "4.0"). */
export const INTEGER_STRING_PATTERN = '^\\s*[+-]?(?:\\d+(?:\\.0*)?|\\.0+)\\s*$';

/** A whole number within [min, max] (at most int4's), given as a JSON number or a string holding one. */
export class IntegerField extends Field {
  readonly kind = 'integer';
  readonly sqlType = 'integer';
  readonly min: number;
  readonly max: number;
  readonly maxJsonBytes = 13;
  readonly columnType: ColumnType = { data_type: 'integer' };

  constructor(options: IntegerOptions) {
    super(options);
    this.min = options.min;
    this.max = Math.min(options.max, INT32_MAX);
  }

  protected checkPresent(value: unknown, errors: string[]) {
    const input = readNumeric(value);
    if (input.kind !== 'number' || input.parts.fraction !== '') {
      errors.push(m.mustBeInteger);
      return undefined;
    }
    const { parts } = input;
    const n = parts.integer.length > 12 ? Number.POSITIVE_INFINITY : Number(parts.integer || '0');
    const signed = parts.negative ? -n : n;
    if (signed < this.min || signed > this.max) {
      errors.push(m.between(this.min, this.max));
      return undefined;
    }
    return signed;
  }

  valueSchema(context: SchemaContext): JsonSchema {
    const number = { type: 'integer', minimum: this.min, maximum: this.max };
    if (context.direction !== 'request') return number;
    return { oneOf: [number, { type: 'string', pattern: INTEGER_STRING_PATTERN }] };
  }

  override typeNote(direction: Direction): string {
    return direction === 'request'
      ? `integer from ${this.min} to ${this.max}: a JSON integer or a string holding one`
      : '';
  }

  example(): unknown {
    return Math.max(this.min, Math.min(this.max, 1));
  }

  /** From min, at most a thousand above it: the small counts these fields hold. */
  generate(rng: Random): unknown {
    return int(rng, this.min, Math.min(this.max, this.min + 1_000));
  }
}
