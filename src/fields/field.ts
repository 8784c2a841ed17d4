/**
 * The field types a field table is written with, and their constructors (text({ max: 20 }), ...).
 * Each type is a class of its own file; this module gathers them so a field table imports one place.
 */
import { ChoiceField } from './choice.js';
import { DateTimeField } from './date-time.js';
import { DecimalField, type DecimalOptions } from './decimal.js';
import type { Common } from './field-type.js';
import { IntegerField, type IntegerOptions } from './integer.js';
import { ItemsField, type ItemsOptions } from './items.js';
import { TextField, type TextOptions } from './text.js';
import { TimeOfDayField } from './time-of-day.js';

export { ChoiceField } from './choice.js';
export { DateTimeField } from './date-time.js';
export { DecimalField } from './decimal.js';
export { type ColumnType, Field, type FieldKind, type FieldValue, type SqlType } from './field-type.js';
export { IntegerField } from './integer.js';
export { ItemsField } from './items.js';
export type { Reference } from './reference.js';
export { TextField } from './text.js';
export { TimeOfDayField } from './time-of-day.js';

export const text = (options: TextOptions) => new TextField(options);
export const timeOfDay = (options: Common = {}) => new TimeOfDayField(options);
export const items = (options: ItemsOptions) => new ItemsField(options);
export const decimal = (options: DecimalOptions) => new DecimalField(options);
export const integer = (options: IntegerOptions) => new IntegerField(options);
export const dateTime = (options: Common = {}) => new DateTimeField(options);
export const choice = (values: readonly string[], options: Common = {}) => new ChoiceField(values, options);
export const flag = (options: Common = {}) => new ChoiceField(['Y', 'N'], options);
