import { ChoiceField } from '../../fields/choice.js';
import { DecimalField } from '../../fields/decimal.js';
import type { Field } from '../../fields/field-type.js';
import { TextField } from '../../fields/text.js';
import type { BatchResource } from '../../resources/batch-resource.js';
import { isPlainText } from './json-bytes.js';

/*
 * How a resource's fields are read on a plain body's bytes (src/batch/plain/plain-batch.ts): which
 * fields are plain (text, choices, decimals without bounds), and where each one's values go.
 */

export const TEXT = 0;
export const CHOICE = 1;
export const DECIMAL = 2;

export interface PlainField {
  kind: typeof TEXT | typeof CHOICE | typeof DECIMAL;
  required: boolean;
  /** Text: the most characters (the bytes of printable ASCII); choice: its longest value's. */
  max: number;
  /** Decimal: the most integer and fraction digits. */
  integerDigits: number;
  fractionDigits: number;
  /** Choice: the values taken, as bytes. */
  values: Uint8Array[];
  /** Where the field's values go: its column among the statement's. */
  column: number;
  /** What an item that leaves the field out gives: its default's literal element, or null for NULL. */
  absent: Uint8Array | null;
}

export interface Plan {
  fields: PlainField[];
  names: Uint8Array[];
  /** The field whose value a row refers to (BatchResource.reference), or -1. */
  referenceAt: number;
  /** The first key part's field: distinct values there make distinct keys. */
  firstKeyAt: number;
}

const plans = new WeakMap<BatchResource, Plan | null>();

/** How the resource's fields are read on bytes; null when one of them is not a plain field. */
export function planOf(resource: BatchResource): Plan | null {
  let plan = plans.get(resource);
  if (plan === undefined) {
    plan = makePlan(resource);
    plans.set(resource, plan);
  }
  return plan;
}

function plainField(field: Field, column: number): PlainField | undefined {
  const { defaultValue } = field;
  if (!field.isColumn) return undefined;
  // A default other than NULL is written as arrayLiteral writes it: a quoted plain string only.
  if (defaultValue !== null && (typeof defaultValue !== 'string' || !isPlainText(defaultValue)))
    return undefined;
  const absent = defaultValue === null ? null : Buffer.from(JSON.stringify(defaultValue), 'latin1');
  const common = { required: field.required, column, absent, max: 0, integerDigits: 0, fractionDigits: 0 };
  if (field instanceof ChoiceField) {
    if (!field.values.every((value) => value.length > 0 && isPlainText(value))) return undefined;
    const values = field.values.map((value) => Buffer.from(value, 'latin1'));
    return { ...common, kind: CHOICE, max: Math.max(...values.map((value) => value.length)), values };
  }
  if (field instanceof TextField) {
    return field.kind === 'text' ? { ...common, kind: TEXT, max: field.max, values: [] } : undefined;
  }
  if (field instanceof DecimalField) {
    if (field.min !== undefined || field.max !== undefined) return undefined;
    return {
      ...common,
      kind: DECIMAL,
      integerDigits: field.precision - field.scale,
      // A float below 1e-6 is written with an exponent (1e-7), which the general path reads its own way.
      fractionDigits: Math.min(field.scale, 6),
      values: [],
    };
  }
  return undefined;
}

function makePlan(resource: BatchResource): Plan | null {
  if (resource.childPosition !== undefined) return null;
  // The referring value and the first key part are read where the item gives them, never defaulted.
  const reference = resource.reference?.position;
  const firstKey = resource.keyPositions[0]!;
  if ([reference, firstKey].some((at) => at !== undefined && resource.fieldList[at]!.defaultValue !== null)) {
    return null;
  }
  const fields: PlainField[] = [];
  for (let at = 0; at < resource.fieldList.length; at++) {
    const field = plainField(resource.fieldList[at]!, resource.columnPositions.indexOf(at));
    if (!field || field.column < 0 || !isPlainText(resource.fieldNames[at]!)) return null;
    fields.push(field);
  }
  return {
    fields,
    names: resource.fieldNames.map((name) => Buffer.from(name, 'latin1')),
    referenceAt: reference ?? -1,
    firstKeyAt: firstKey,
  };
}
