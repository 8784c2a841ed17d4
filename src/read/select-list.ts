import { ident } from '../db/sql.js';
import { DateTimeField, type Field, ItemsField } from '../fields/field.js';

/**
 * The SELECT list that turns a table's columns into the spec's output objects, derived from the same
 * field table as the batch endpoint: every field, DateTime as yyyy-MM-ddTHH:mm:ss, numbers left as
 * numeric so PostgreSQL's JSON keeps every digit. Items fields are not columns and are left out.
 */
export function selectList(fields: Readonly<Record<string, Field>>, alias: string): string {
  return Object.entries(fields)
    .filter(([, field]) => !(field instanceof ItemsField))
    .map(([name, field]) => {
      const column = `${alias}.${ident(name)}`;
      return field instanceof DateTimeField
        ? `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS') AS ${ident(name)}`
        : column;
    })
    .join(', ');
}

/** Builds "$n" placeholders while collecting their values, so WHERE clauses hold only given filters. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}
