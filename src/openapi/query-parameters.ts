import { HttpProblem } from '../http/problems.js';
import { checkQuery, type ParamRule } from '../read/query-params.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';

export const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

function schemaOf(rule: ParamRule): JsonSchema {
  switch (rule.kind) {
    case 'text':
      return { type: 'string', minLength: 1, maxLength: rule.max };
    case 'date':
      return { type: 'string', format: 'date', pattern: DATE_PATTERN };
    case 'integer':
      return {
        type: 'integer',
        minimum: rule.min,
        ...(rule.max === undefined ? {} : { maximum: rule.max }),
        default: rule.default,
      };
    case 'choice':
      return { type: 'string', enum: [...rule.values], default: rule.default };
  }
}

function ruleText(rule: ParamRule): string {
  switch (rule.kind) {
    case 'text':
      return `at most ${rule.max} characters`;
    case 'date':
      return 'a date YYYY-MM-DD';
    case 'integer':
      return `${rule.max === undefined ? `at least ${rule.min}` : `${rule.min} to ${rule.max}`}, default ${rule.default}`;
    case 'choice':
      // A required choice (the feed's resource) has no default to name.
      return `one of ${rule.values.join(', ')}${rule.default === '' ? '' : `, default ${rule.default}`}`;
  }
}

/**
 * The query parameters of a list from its rules (src/read/list-params.ts): schema and limits come from the
 * rule, the meaning from meanings (a parameter without one is described by its rule alone).
 */
export function queryParameters(
  rules: Readonly<Record<string, ParamRule>>,
  meanings: Readonly<Record<string, string>>,
): OpenApiObject[] {
  return Object.entries(rules).map(([name, rule]) => ({
    name,
    in: 'query',
    required: false,
    description: [meanings[name], ruleText(rule)].filter(Boolean).join('; '),
    schema: schemaOf(rule),
  }));
}

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
