import type { Field } from '../fields/field.js';

/** Largest batch the spec allows (backoffice-api.md 4.3 and 8). */
export const MAX_BATCH_ITEMS = 10_000;

export interface BatchResourceDefinition {
  /** Plural name used in the OpenAPI document and logs: 'stocks'. */
  readonly name: string;
  readonly path: string;
  /** Success message of the spec, word for word. */
  readonly message: string;
  readonly summary: string;
  readonly table: string;
  /** Uniqueness key, in the order of the table's primary key after tenant_id. */
  readonly key: readonly string[];
  /** What a key that already exists does: ignored (insert-if-absent) or updated (upsert). */
  readonly onExisting: 'ignore' | 'update';
  /** The field table: JSON field name = column name. Order is the order errors are reported in. */
  readonly fields: Readonly<Record<string, Field>>;
  /** Columns the system sets when a row is inserted: column -> SQL expression. */
  readonly setOnInsert?: Readonly<Record<string, string>>;
  /** Columns the system sets when an existing row changes (upsert only): column -> SQL expression. */
  readonly setOnUpdate?: Readonly<Record<string, string>>;
}

export interface BatchResource extends BatchResourceDefinition {
  readonly fieldNames: readonly string[];
  readonly fieldList: readonly Field[];
  /** Positions of the key fields in fieldNames. */
  readonly keyPositions: readonly number[];
  /** Position of the field that must name an existing product, if any. */
  readonly productPosition: number | undefined;
  /** Request body limit in bytes: a full batch at maximum field sizes, pretty-printed, fits with room. */
  readonly bodyLimit: number;
}

/** Indentation, quotes, colon, comma and newline around one "key": value pair, pretty-printed. */
const PER_FIELD_OVERHEAD = 16;
const PER_ITEM_OVERHEAD = 16;
const ONE_MIB = 1024 * 1024;

export function batchResource(definition: BatchResourceDefinition): BatchResource {
  const fieldNames = Object.keys(definition.fields);
  const fieldList = fieldNames.map((name) => definition.fields[name]!);
  const position = (name: string) => {
    const at = fieldNames.indexOf(name);
    if (at < 0) throw new Error(`${definition.name}: key field ${name} is not in the field table`);
    return at;
  };
  const productAt = fieldList.findIndex((field) => field.referencesProduct);
  const itemBytes = fieldNames.reduce(
    (sum, name, at) => sum + name.length + fieldList[at]!.maxJsonBytes + PER_FIELD_OVERHEAD,
    PER_ITEM_OVERHEAD,
  );
  return {
    ...definition,
    fieldNames,
    fieldList,
    keyPositions: definition.key.map(position),
    productPosition: productAt < 0 ? undefined : productAt,
    bodyLimit: Math.ceil((itemBytes * MAX_BATCH_ITEMS + ONE_MIB) / ONE_MIB) * ONE_MIB,
  };
}
