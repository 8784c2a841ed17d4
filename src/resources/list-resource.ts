import { DateTimeField, type Field, ItemsField, TextField } from '../fields/field.js';

/**
 * The table a list reads, as its field table describes it. A batch resource (src/resources/*.ts) is
 * one: a list shows the rows its batch endpoint loads, with the same fields.
 */
export interface ListSourceTable {
  readonly name: string;
  readonly table: string;
  /** Unique within a tenant: a list's sort breaks ties with it, so paging is stable. */
  readonly key: readonly string[];
  readonly fields: Readonly<Record<string, Field>>;
  /** Fields the system always sets on insert (they are never null in a listed row). */
  readonly insertDefaults?: Readonly<Record<string, 'now'>>;
  /** Where the rows of its items field are kept, listed inside each row. */
  readonly children?: { readonly table: string; readonly parentColumn: string };
  /** Columns the system sets (BatchResourceDefinition.systemColumns): what `only` and `shows` name. */
  readonly systemColumns?: Readonly<Record<string, Field>>;
}

/**
 * A query-parameter filter on a field of the source table:
 * - equals: rows whose (text) field is exactly the value;
 * - since: rows whose DateTime field is on or after the date (YYYY-MM-DD) given.
 */
export type ListFilterDefinition =
  | {
      readonly field: string;
      readonly match: 'equals';
      /** What the parameter means, for the OpenAPI document. */
      readonly meaning: string;
      /**
       * Longest value accepted, only when the contract's number differs from the field's maximum
       * length; otherwise the field's own maximum is the rule.
       */
      readonly maxLength?: number;
    }
  | { readonly field: string; readonly match: 'since'; readonly meaning: string };

export interface ListResourceDefinition {
  /** The endpoint: GET path. */
  readonly path: string;
  readonly source: ListSourceTable;
  /**
   * The rows listed are those whose `unset` system columns are all null and whose `set` ones are not
   * (pending deliveries: neither acknowledged nor rejected). Absent: every row of the tenant.
   */
  readonly only?: { readonly unset: readonly string[]; readonly set?: readonly string[] };
  /**
   * System columns each listed object shows after the fields, set on every row the list has (a
   * rejected delivery's date and reason).
   */
  readonly shows?: readonly string[];
  /** Query parameter -> filter, in the order the parameters are documented and applied. */
  readonly filters: Readonly<Record<string, ListFilterDefinition>>;
  /**
   * The one sort: `sort=<field>` ascending, `sort=-<field>` descending (a DateTime field, or a shown
   * system column), the source's key breaking ties in the same direction. nullsAs 'oldest': a row without the date sorts as older than any
   * (first ascending, last descending); absent, the field is never null (set on insert).
   */
  readonly sort: {
    readonly field: string;
    readonly default: 'ascending' | 'descending';
    readonly nullsAs?: 'oldest';
    /** Other fields `sort` may name (the rejected list also sorts as the pending one does). */
    readonly others?: readonly { readonly field: string; readonly nullsAs?: 'oldest' }[];
  };
  /** Page size: `limit` from 1 to max, default when not given. Pages count from 1. */
  readonly limit: { readonly max: number; readonly default: number };
  /**
   * Its row_counts name (migrations 005, 007): the triggers that keep the unfiltered total and the
   * version filtered totals are checked against.
   */
  readonly counter: string;
  /** The OpenAPI operation and the schema of one listed object (and of its items). */
  readonly openapi: {
    readonly operationId: string;
    readonly summary: string;
    readonly description: string;
    readonly schema: { readonly name: string; readonly description: string };
    readonly itemsSchema?: { readonly name: string; readonly description: string };
  };
}

/** A filter with its rule resolved from the field it refers to. */
export type ListFilter =
  | { readonly field: string; readonly match: 'equals'; readonly meaning: string; readonly maxLength: number }
  | { readonly field: string; readonly match: 'since'; readonly meaning: string };

export interface ListResource extends Omit<ListResourceDefinition, 'filters'> {
  readonly filters: Readonly<Record<string, ListFilter>>;
  /** The source's one-column key: the sort's tie-break and what pages are joined back on. */
  readonly key: string;
  /** The items field listed inside each row, if the source has one. */
  readonly items: { readonly name: string; readonly field: ItemsField } | undefined;
  /** What each listed object shows: the source's fields, then the system columns of `shows`. */
  readonly shown: Readonly<Record<string, Field>>;
}

/** Column names go into statements as written: only plain lower-case identifiers are accepted. */
const PLAIN = /^[a-z_][a-z0-9_]*$/;

/**
 * One list endpoint, declared once: its route, query rules, statement and OpenAPI all come from it
 * (src/routes/v1/list-route.ts, src/read/list-params.ts, src/sql/list-page.ts, src/openapi/read-paths.ts).
 * Checks the declaration against its field table at start, so a filter on a field that does not
 * exist, or of a type it cannot filter, fails at once.
 */
export function listResource(definition: ListResourceDefinition): ListResource {
  const { source } = definition;
  const fail = (why: string): never => {
    throw new Error(`list ${definition.path}: ${why}`);
  };
  const fieldOf = (name: string): Field =>
    source.fields[name] ?? fail(`${name} is not a field of ${source.name}`);
  if (source.key.length !== 1) fail('the source needs a one-field key');
  const key = source.key[0]!;
  const filters: Record<string, ListFilter> = {};
  for (const [param, filter] of Object.entries(definition.filters)) {
    const field = fieldOf(filter.field);
    if (!PLAIN.test(filter.field)) fail(`${filter.field} is not a plain column name`);
    if (filter.match === 'equals') {
      if (!(field instanceof TextField)) fail(`${param}: an equals filter needs a text field`);
      filters[param] = { ...filter, maxLength: filter.maxLength ?? (field as TextField).max };
    } else {
      if (!(field instanceof DateTimeField)) fail(`${param}: a since filter needs a DateTime field`);
      filters[param] = filter;
    }
  }
  const system = source.systemColumns ?? {};
  const systemColumn = (name: string): Field =>
    system[name] ?? fail(`${name} is not a system column of ${source.name}`);
  const only = [...(definition.only?.unset ?? []), ...(definition.only?.set ?? [])];
  for (const name of only) systemColumn(name);
  // Listed as the change feed lists them: the fields (items included), then the system columns.
  const shown: Record<string, Field> = { ...source.fields };
  for (const name of definition.shows ?? []) shown[name] = systemColumn(name);
  const sortFields = [definition.sort.field, ...(definition.sort.others ?? []).map((other) => other.field)];
  for (const name of sortFields) {
    const sortField = shown[name] ?? fail(`${name} is not shown by the list`);
    if (!(sortField instanceof DateTimeField)) fail('the sort needs a DateTime field');
  }
  const itemsEntry = Object.entries(source.fields).find(([, field]) => field instanceof ItemsField);
  if ((itemsEntry === undefined) !== (source.children === undefined)) {
    fail('an items field and a children table go together');
  }
  const names = [key, ...sortFields, source.table, definition.counter];
  names.push(...only, ...(definition.shows ?? []));
  if (itemsEntry && source.children) {
    names.push(
      itemsEntry[0],
      (itemsEntry[1] as ItemsField).key,
      source.children.table,
      source.children.parentColumn,
    );
  }
  for (const name of names) if (!PLAIN.test(name)) fail(`${name} is not a plain identifier`);
  if (itemsEntry && !definition.openapi.itemsSchema) fail('a source with items needs an items schema');
  return {
    ...definition,
    filters,
    key,
    items: itemsEntry && { name: itemsEntry[0], field: itemsEntry[1] as ItemsField },
    shown,
  };
}
