import { formatDecimal, readNumeric } from './decimal-text.js';
import { fieldMessages as m } from './messages.js';

/** PostgreSQL type of the array parameter a column is sent in (unnest($n::type[])). */
export type SqlType = 'text' | 'numeric' | 'integer' | 'timestamp';
/** A normalised value: text and decimals as strings, integers as numbers; child rows for items. */
export type FieldValue = string | number | null | FieldValue[][];

interface Common {
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
 */
export abstract class Field {
  readonly required: boolean;
  readonly description: string;
  readonly defaultValue: FieldValue;
  abstract readonly sqlType: SqlType;
  /** Longest JSON text a valid value can take (UTF-8 bytes), for the request body limit. */
  abstract readonly maxJsonBytes: number;
  /** A product code that must exist in the tenant's product master. */
  readonly referencesProduct: boolean = false;

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
}

interface TextOptions extends Common {
  max: number;
  references?: 'products';
}

/** Code points, not UTF-16 units: "exceeds maximum length" counts characters as people do. */
function characterCount(text: string, max: number): number {
  // Fast path: a string of at most max UTF-16 units has at most max code points.
  if (text.length <= max) return text.length;
  let count = 0;
  for (const _ of text) count++;
  return count;
}

export class TextField extends Field {
  readonly sqlType = 'text';
  readonly max: number;
  override readonly referencesProduct: boolean;
  /** Every character as a six-byte \\uXXXX escape: what Python's json.dumps sends by default. */
  get maxJsonBytes() {
    return this.max * 6 + 2;
  }

  constructor(options: TextOptions) {
    super(options);
    this.max = options.max;
    this.referencesProduct = options.references === 'products';
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
}

/** A string restricted to a fixed set of values (Y/N flags, enumerations). Case-sensitive. */
export class ChoiceField extends TextField {
  readonly values: readonly string[];
  constructor(values: readonly string[], options: Common) {
    super({ ...options, max: Math.max(...values.map((v) => v.length)) });
    this.values = values;
  }
  protected override checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (!this.values.includes(value)) {
      errors.push(m.oneOf(this.values));
      return undefined;
    }
    return value;
  }
}

interface DecimalOptions extends Common {
  precision: number;
  scale: number;
  min?: number;
  max?: number;
}

/** DecimalField's fast path's answer for a number it leaves to the general path. */
const NOT_PLAIN = Symbol('not plain');

export class DecimalField extends Field {
  readonly sqlType = 'numeric';
  readonly precision: number;
  readonly scale: number;
  readonly min: number | undefined;
  readonly max: number | undefined;
  get maxJsonBytes() {
    return this.precision + 4; // sign, point, quotes
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
      const checked = this.#checkFloat(value, errors);
      if (checked !== NOT_PLAIN) return checked;
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

  /**
   * The common case without taking the text apart: a finite JSON number that String() writes without
   * an exponent is already the canonical text (no leading zeros, no trailing fraction zeros, "-0" as
   * "0"), so its digits are counted in place. Same answers as the general path (test/decimal-text.test.ts).
   */
  #checkFloat(value: number, errors: string[]): FieldValue | undefined | typeof NOT_PLAIN {
    const text = String(value);
    if (!Number.isFinite(value) || text.includes('e')) return NOT_PLAIN;
    const sign = value < 0 ? 1 : 0;
    const point = text.indexOf('.');
    const integerEnd = point < 0 ? text.length : point;
    // "0" and "0.5": zero has no integer digits.
    const integerDigits = text.charCodeAt(sign) === 48 ? 0 : integerEnd - sign;
    const fractionDigits = point < 0 ? 0 : text.length - point - 1;
    return this.#withinLimits(integerDigits, fractionDigits, text, errors);
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
}

interface IntegerOptions extends Common {
  min: number;
  max: number;
}

const INT32_MAX = 2_147_483_647;

export class IntegerField extends Field {
  readonly sqlType = 'integer';
  readonly min: number;
  readonly max: number;
  readonly maxJsonBytes = 13;

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
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/;

/** yyyy-MM-ddTHH:mm:ss, no zone, a real calendar date. */
export class DateTimeField extends Field {
  readonly sqlType = 'timestamp';
  readonly maxJsonBytes = 21;

  protected checkPresent(value: unknown, errors: string[]) {
    const match = typeof value === 'string' ? DATE_TIME.exec(value) : null;
    if (!match) {
      errors.push(typeof value === 'string' ? m.dateTime : m.mustBeString);
      return undefined;
    }
    const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
    const date = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, s));
    if (
      date.getUTCFullYear() !== y ||
      date.getUTCMonth() !== mo! - 1 ||
      date.getUTCDate() !== d ||
      h! > 23 ||
      mi! > 59 ||
      s! > 59
    ) {
      errors.push(m.dateTime);
      return undefined;
    }
    return value as string;
  }
}

const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d$/;

/** HH:MM, 00:00 to 23:59 (service windows). */
export class TimeOfDayField extends TextField {
  constructor(options: Common) {
    super({ ...options, max: 5 });
  }
  protected override checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (!TIME_OF_DAY.test(value)) {
      errors.push(m.timeOfDay);
      return undefined;
    }
    return value;
  }
}

interface ItemsOptions extends Common {
  /** The field table of one child object. */
  fields: Readonly<Record<string, Field>>;
  /** Field whose value must be unique among the children of one parent (their key). */
  key: string;
  maxItems: number;
}

/**
 * An array of child objects stored in a table of their own (delivery items). Checked by the batch
 * validator, which reports each child's problems under "items[i].field".
 */
export class ItemsField extends Field {
  readonly sqlType = 'text'; // never sent as a column: children get a statement of their own
  readonly fields: Readonly<Record<string, Field>>;
  readonly key: string;
  readonly maxItems: number;
  get maxJsonBytes() {
    const child = Object.entries(this.fields).reduce(
      (sum, [name, field]) => sum + name.length + field.maxJsonBytes + 16,
      16,
    );
    return child * this.maxItems;
  }

  constructor(options: ItemsOptions) {
    super({ ...options, default: [] });
    this.fields = options.fields;
    this.key = options.key;
    this.maxItems = options.maxItems;
  }

  protected checkPresent(): FieldValue | undefined {
    throw new Error('items are checked by the batch validator');
  }
}

export const text = (options: TextOptions) => new TextField(options);
export const timeOfDay = (options: Common = {}) => new TimeOfDayField(options);
export const items = (options: ItemsOptions) => new ItemsField(options);
export const decimal = (options: DecimalOptions) => new DecimalField(options);
export const integer = (options: IntegerOptions) => new IntegerField(options);
export const dateTime = (options: Common = {}) => new DateTimeField(options);
export const choice = (values: readonly string[], options: Common = {}) => new ChoiceField(values, options);
export const flag = (options: Common = {}) => new ChoiceField(['Y', 'N'], options);
