import { exampleObject } from './example.js';
import { type Common, Field, type FieldValue } from './field-type.js';
import type { Direction, JsonSchema, SchemaContext } from './json-schema.js';

export interface ItemsOptions extends Common {
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
  readonly kind = 'items';
  readonly sqlType = 'text'; // never sent as a column: children get a statement of their own
  override readonly isColumn = false;
  readonly columnType = undefined;
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

  valueSchema(context: SchemaContext): JsonSchema {
    return { type: 'array', maxItems: this.maxItems, items: context.childSchema() };
  }

  override typeNote(direction: Direction): string {
    return direction === 'request'
      ? `at most ${this.maxItems} objects; ${this.key} unique within one record`
      : '';
  }

  /** The schema's default ([]) says it; "default []" in the text would only repeat it. */
  override defaultNote(): string {
    return '';
  }

  example(): unknown {
    return [exampleObject(this.fields, { requiredOnly: false })];
  }

  /** No lines: a data set sets them itself, since they depend on their position (src/seed/generate.ts). */
  generate(): unknown {
    return [];
  }

  /** A table of its own: a read selects its rows apart. */
  override selectExpression(): undefined {
    return undefined;
  }
}
