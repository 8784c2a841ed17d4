import { ident } from '../db/sql.js';
import type { Field } from '../fields/field.js';

/**
 * The SELECT list that turns a table's columns into the spec's output objects, derived from the same
 * field table as the batch endpoint: each field's own select expression (DateTime as
 * yyyy-MM-ddTHH:mm:ss, numbers left as numeric so PostgreSQL's JSON keeps every digit). Fields that are
 * not columns (items) have none and are left out.
 */
export function selectList(fields: Readonly<Record<string, Field>>, alias: string): string {
  const list: string[] = [];
  for (const [name, field] of Object.entries(fields)) {
    const column = `${alias}.${ident(name)}`;
    const expression = field.selectExpression(column);
    if (expression === undefined) continue;
    list.push(expression === column ? column : `${expression} AS ${ident(name)}`);
  }
  return list.join(', ');
}
