/** One query parameter of a read endpoint and its rule (backoffice-api.md 4.1, 4.2; extensions.md 6). */
export type ParamRule =
  | { kind: 'text'; max: number }
  | { kind: 'date' }
  | { kind: 'integer'; min: number; max?: number; default: number }
  | { kind: 'choice'; values: readonly string[]; default: string };

export type ParsedQuery = Record<string, string | number | undefined>;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** The problem with a value, or undefined when it obeys the rule. */
export function paramProblem(rule: ParamRule, value: string): string | undefined {
  switch (rule.kind) {
    case 'text':
      // PostgreSQL text cannot hold U+0000: refused here, it stays a 400 instead of a failed statement.
      if (value.includes('\u0000')) return 'Parameter must not contain NUL characters';
      return [...value].length > rule.max
        ? `Parameter exceeds maximum length of ${rule.max} characters`
        : undefined;
    case 'date':
      return isCalendarDate(value) ? undefined : 'Parameter must be a date in the format YYYY-MM-DD';
    case 'integer': {
      const ok =
        /^\d{1,9}$/.test(value) &&
        Number(value) >= rule.min &&
        (rule.max === undefined || Number(value) <= rule.max);
      if (ok) return undefined;
      return rule.max === undefined
        ? `Parameter must be an integer of at least ${rule.min}`
        : `Parameter must be an integer from ${rule.min} to ${rule.max}`;
    }
    case 'choice':
      return rule.values.includes(value) ? undefined : `Parameter must be one of ${rule.values.join(', ')}`;
  }
}

/** A parameter that broke its rule, named as the 400 answer names it (extensions.md 6). */
export interface ParamError {
  field: string;
  message: string;
}

/** A query string's values with the defaults filled in, or every problem it has. */
export type QueryCheck = { ok: true; values: ParsedQuery } | { ok: false; errors: ParamError[] };

/**
 * Checks a query string against the rules: every problem is reported at once, nothing is clamped,
 * unknown and repeated parameters are refused, an empty value is an error (an empty filter from a
 * script must not silently list everything). The route answers the problems with a 400.
 */
export function checkQuery(rules: Readonly<Record<string, ParamRule>>, query: unknown): QueryCheck {
  const given = (query ?? {}) as Record<string, unknown>;
  const errors: ParamError[] = [];
  const parsed: ParsedQuery = {};
  for (const [name, raw] of Object.entries(given)) {
    const rule = Object.hasOwn(rules, name) ? rules[name] : undefined;
    if (!rule) {
      errors.push({ field: name, message: 'Unknown parameter' });
    } else if (typeof raw !== 'string') {
      errors.push({ field: name, message: 'Parameter must be given once' });
    } else if (raw === '') {
      errors.push({ field: name, message: 'Parameter must not be empty' });
    } else {
      const problem = paramProblem(rule, raw);
      if (problem) errors.push({ field: name, message: problem });
      else parsed[name] = rule.kind === 'integer' ? Number(raw) : raw;
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  for (const [name, rule] of Object.entries(rules)) {
    if (parsed[name] === undefined && 'default' in rule) parsed[name] = rule.default;
  }
  return { ok: true, values: parsed };
}
