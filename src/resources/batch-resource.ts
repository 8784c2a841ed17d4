import { type Field, ItemsField } from '../fields/field.js';

/** Largest batch the spec allows (backoffice-api.md 4.3 and 8). */
export const MAX_BATCH_ITEMS = 10_000;

/** What an upsert writes in a column the system sets (BatchResourceDefinition.setOnUpdate). */
export type UpdateRule = 'now' | 'kept' | 'given-or-now';

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
  /**
   * Columns the system sets to a constant when a row is inserted: column -> its value ('Y'). The
   * declaration states values, never SQL: src/sql/batch-write.ts writes the statement.
   */
  readonly setOnInsert?: Readonly<Record<string, string>>;
  /**
   * What the system writes in a column when an existing row changes (upsert only): 'now' (the time of
   * the write), 'kept' (the value the row has, whatever the item says), 'given-or-now' (the item's
   * value, or the time of the write when it gives none; giving one counts as a change on its own: a
   * customer whose only news is its modification date is updated). updated_at is 'now' unless said.
   */
  readonly setOnUpdate?: Readonly<Record<string, UpdateRule>>;
  /** Fields that take the time of the write when an inserted item gives them as null or absent. */
  readonly insertDefaults?: Readonly<Record<string, 'now'>>;
  /** Where the rows of an items field go: their table, and the column that names the parent. */
  readonly children?: { readonly table: string; readonly parentColumn: string };
  /**
   * Columns the system sets and no batch sends (a delivery's acknowledgement and rejection): lists
   * and the change feed show them after the fields.
   */
  readonly systemColumns?: Readonly<Record<string, Field>>;
}

export interface BatchResource extends BatchResourceDefinition {
  readonly fieldNames: readonly string[];
  readonly fieldList: readonly Field[];
  /** Positions of the key fields in fieldNames. */
  readonly keyPositions: readonly number[];
  /** The field whose value must name a row of another resource (field.references), if any. */
  readonly reference: ResourceReference | undefined;
  /** Positions of the fields stored as columns of the table (all but an items field). */
  readonly columnPositions: readonly number[];
  /** Position of the items field whose rows go to the children table, if any. */
  readonly childPosition: number | undefined;
  /** Request body limit in bytes: a full batch at maximum field sizes, pretty-printed, fits with room. */
  readonly bodyLimit: number;
  /** The longest JSON text one valid item can take (UTF-8 bytes): the line limit of a bulk job's file. */
  readonly maxItemBytes: number;
}

/** Where a resource's field refers to another resource's key, and what that key is. */
export interface ResourceReference {
  /** Position of the referring field in fieldNames. */
  readonly position: number;
  /** The referring field's name: the errors' field. */
  readonly name: string;
  /** The referred table and its key column; read when first used, so resources may load in any order. */
  readonly table: string;
  readonly column: string;
  /** The batch endpoint that loads the referred rows (for the documentation). */
  readonly path: string;
  /** The 400 problem of a value naming no row. */
  readonly message: string;
}

function resourceReference(definition: BatchResourceDefinition, fieldList: readonly Field[]) {
  const positions = fieldList.flatMap((field, at) => (field.references ? [at] : []));
  if (positions.length > 1) {
    // The pipeline runs one query for unknown keys (src/sql/batch-write.ts); two references would need two.
    throw new Error(`${definition.name}: at most one field may refer to another resource`);
  }
  const position = positions[0];
  if (position === undefined) return undefined;
  const reference = fieldList[position]!.references!;
  const target = () => {
    const resource = reference.resource();
    if (resource.key.length !== 1 || resource.key[0] !== reference.field) {
      throw new Error(`${definition.name}: a reference names ${resource.name}'s one key field`);
    }
    return resource;
  };
  return {
    position,
    name: Object.keys(definition.fields)[position]!,
    get table() {
      return target().table;
    },
    get path() {
      return target().path;
    },
    column: reference.field,
    message: reference.message,
  } satisfies ResourceReference;
}

/** Indentation, quotes, colon, comma and newline around one "key": value pair, pretty-printed. */
const PER_FIELD_OVERHEAD = 16;
const PER_ITEM_OVERHEAD = 16;
const ONE_MIB = 1024 * 1024;
/**
 * No body is read past this, whatever the field table allows: parsing 64 MiB of JSON already takes a
 * few hundred MB of memory. Only the wide customer and delivery tables reach it
 * (docs/decisions/0024-body-limits.md).
 */
export const MAX_BODY_LIMIT = 64 * ONE_MIB;

export function batchResource(definition: BatchResourceDefinition): BatchResource {
  const fieldNames = Object.keys(definition.fields);
  const fieldList = fieldNames.map((name) => definition.fields[name]!);
  const position = (name: string) => {
    const at = fieldNames.indexOf(name);
    if (at < 0) throw new Error(`${definition.name}: key field ${name} is not in the field table`);
    return at;
  };
  const reference = resourceReference(definition, fieldList);
  const childAt = fieldList.findIndex((field) => field instanceof ItemsField);
  if (childAt >= 0 !== (definition.children !== undefined)) {
    throw new Error(`${definition.name}: an items field and a children table go together`);
  }
  if (childAt >= 0 && (definition.onExisting !== 'ignore' || definition.key.length !== 1)) {
    throw new Error(`${definition.name}: children are supported for insert-if-absent with a one-field key`);
  }
  const itemBytes = fieldNames.reduce(
    (sum, name, at) => sum + name.length + fieldList[at]!.maxJsonBytes + PER_FIELD_OVERHEAD,
    PER_ITEM_OVERHEAD,
  );
  return {
    ...definition,
    fieldNames,
    fieldList,
    keyPositions: definition.key.map(position),
    reference,
    columnPositions: fieldList.flatMap((_, at) => (at === childAt ? [] : [at])),
    childPosition: childAt < 0 ? undefined : childAt,
    maxItemBytes: itemBytes,
    bodyLimit: Math.min(
      MAX_BODY_LIMIT,
      Math.ceil((itemBytes * MAX_BATCH_ITEMS + ONE_MIB) / ONE_MIB) * ONE_MIB,
    ),
  };
}
