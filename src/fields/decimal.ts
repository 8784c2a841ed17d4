import { floatDigits } from './decimal-float.js';
import { formatDecimal, readNumeric } from './decimal-text.js';
import { type ColumnType, type Common, Field } from './field-type.js';
import type { Direction, JsonSchema, SchemaContext } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import type { Random } from './random.js';

export interface DecimalOptions extends Common {
  precision: number;
  scale: number;
  min?: number;
  max?: number;
}

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

const range = (min: number | undefined, max: number | undefined) =>
  min !== undefined && max !== undefined ? `, from ${min} to ${max}` : '';

/** A number of numeric(precision, scale), kept as its canonical decimal text (no float in between). */
export class DecimalField extends Field {
  readonly kind = 'decimal';
  readonly sqlType = 'numeric';
  readonly precision: number;
  readonly scale: number;
  readonly min: number | undefined;
  readonly max: number | undefined;
  get maxJsonBytes() {
    return this.precision + 4; // sign, point, quotes
  }
  get columnType(): ColumnType {
    return { data_type: 'numeric', numeric_precision: this.precision, numeric_scale: this.scale };
  }

  constructor(options: DecimalOptions) {
    super(options);
    this.precision = options.precision;
    this.scale = options.scale;
    this.min = options.min;
    this.max = options.max;
  }

  protected checkPresent(value: unknown, errors: string[]) {
    if (typeof value === 'number') {
      const digits = floatDigits(value);
      if (digits) return this.#withinLimits(digits.integerDigits, digits.fractionDigits, digits.text, errors);
    }
    const input = readNumeric(value);
    if (input.kind === 'notNumeric') {
      errors.push(m.mustBeDecimal);
      return undefined;
    }
    if (input.kind === 'badFormat') {
      errors.push(m.invalidDecimal);
      return undefined;
    }
    const { parts } = input;
    return this.#withinLimits(parts.integer.length, parts.fraction.length, formatDecimal(parts), errors);
  }

  /** The field's precision, scale and bounds, checked on a canonical decimal text and its digits. */
  #withinLimits(integerDigits: number, fractionDigits: number, text: string, errors: string[]) {
    const allowed = this.precision - this.scale;
    const before = errors.length;
    if (integerDigits > allowed) errors.push(m.maxIntegerDigits(allowed));
    if (fractionDigits > this.scale) errors.push(m.maxDecimalPlaces(this.scale));
    if (errors.length > before) return undefined;
    // Bounded fields are small (day: Decimal(1,0)), so a float compares them exactly.
    if (this.min !== undefined || this.max !== undefined) {
      const number = Number(text);
      if ((this.min !== undefined && number < this.min) || (this.max !== undefined && number > this.max)) {
        errors.push(m.between(this.min ?? '-∞', this.max ?? '∞'));
        return undefined;
      }
    }
    return text;
  }

  /**
   * Requests: a JSON number (its integer digits bounded) or a numeric string; responses: the number
   * PostgreSQL's JSON writes with every stored digit.
   */
  valueSchema(context: SchemaContext): JsonSchema {
    const bounds: JsonSchema = {};
    if (this.min !== undefined) bounds.minimum = this.min;
    if (this.max !== undefined) bounds.maximum = this.max;
    if (context.direction !== 'request') return { type: 'number', ...bounds };
    const limit = 10 ** (this.precision - this.scale);
    const number: JsonSchema = {
      type: 'number',
      ...(this.min === undefined ? { exclusiveMinimum: -limit } : {}),
      ...(this.max === undefined ? { exclusiveMaximum: limit } : {}),
      ...bounds,
    };
    const text = { type: 'string', pattern: decimalStringPattern(this.precision, this.scale) };
    return { oneOf: [number, text] };
  }

  override typeNote(direction: Direction): string {
    const name = `Decimal(${this.precision},${this.scale})`;
    const integerDigits = this.precision - this.scale;
    return direction === 'request'
      ? `${name}: a JSON number or a numeric string such as "12.50" (no exponent, no thousands separator), ` +
          `at most ${integerDigits} integer digits and ${this.scale} decimal places${range(this.min, this.max)}`
      : `${name}, a JSON number with every stored digit`;
  }

  /** Precision and scale, which JSON Schema cannot say of a number. */
  override schemaExtensions(): JsonSchema {
    return { 'x-precision': this.precision, 'x-scale': this.scale };
  }

  example(): unknown {
    const integer = this.precision - this.scale >= 4 ? '1500' : '1';
    const fraction = this.scale > 0 ? `.${'25'.slice(0, this.scale)}` : '';
    let value = Number(integer + fraction);
    if (this.max !== undefined) value = Math.min(value, this.max);
    if (this.min !== undefined) value = Math.max(value, this.min);
    return value;
  }

  /** Decimal text within the bounds and at most six integer digits, every decimal place written. */
  generate(rng: Random): unknown {
    const integerDigits = Math.min(this.precision - this.scale, 6);
    const low = this.min ?? 0;
    const high = Math.min(this.max ?? 10 ** integerDigits - 1, 10 ** integerDigits - 1);
    const scaled = Math.round((low + rng() * (high - low)) * 10 ** this.scale);
    return (scaled / 10 ** this.scale).toFixed(this.scale);
  }
}
