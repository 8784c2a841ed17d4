import { HttpProblem } from '../http/problems.js';
import { checkQuery, type ParamRule } from '../read/query-params.js';

/*
 * The example of a query string's 400: what the route answers for values that break each rule. The
 * parameters themselves are the routes' declarations (querySchema, src/http/route-schema.ts).
 */

/** A value that breaks the rule, for the example of a 400. */
function badValue(rule: ParamRule): string {
  switch (rule.kind) {
    case 'text':
      return 'X'.repeat(rule.max + 1);
    case 'date':
      return '2026-02-30';
    case 'integer':
      return rule.max === undefined ? String(rule.min - 1) : String(rule.max + 1);
    case 'choice':
      return 'name';
  }
}

/** The 400 body the list route gives for a query string that breaks each rule in turn. */
export function parameterErrorExample(rules: Readonly<Record<string, ParamRule>>): object {
  const query: Record<string, string> = {};
  for (const [name, rule] of Object.entries(rules)) {
    if (rule.kind !== 'text' || Object.keys(query).length === 0) query[name] = badValue(rule);
  }
  query.limt = '10';
  const checked = checkQuery(rules, query);
  if (checked.ok) throw new Error('parameterErrorExample: the query was accepted');
  return new HttpProblem(400, checked.errors).body();
}
