import { type ParamRule, paramProblem } from '../read/query-params.js';
import { InvalidBatchParameter } from './batch-errors.js';

/** The query parameters of every batch endpoint (extensions.md 9); all off by default. */
export interface BatchOptions {
  /** outcomes=true: the 201 lists every item's outcome. */
  outcomes: boolean;
  /** dry_run=true: validate and count, write nothing, answer 200. */
  dryRun: boolean;
  /** on_invalid=skip: write the valid items, report the others. */
  skipInvalid: boolean;
}

export const NO_OPTIONS: BatchOptions = Object.freeze({ outcomes: false, dryRun: false, skipInvalid: false });

/**
 * Each parameter's rule, the one place its values are said: the check below, the route's declared
 * query string and the document's parameters all read it. The default is the first value; the other
 * turns its option on.
 */
export const batchParamRules = {
  outcomes: { kind: 'choice', values: ['false', 'true'], default: 'false' },
  dry_run: { kind: 'choice', values: ['false', 'true'], default: 'false' },
  on_invalid: { kind: 'choice', values: ['reject', 'skip'], default: 'reject' },
} as const satisfies Readonly<Record<string, ParamRule>>;

type BatchParameter = keyof typeof batchParamRules;

/** The option each parameter sets. */
const OPTION_OF: Readonly<Record<BatchParameter, keyof BatchOptions>> = {
  outcomes: 'outcomes',
  dry_run: 'dryRun',
  on_invalid: 'skipInvalid',
};

type BatchRule = (typeof batchParamRules)[BatchParameter];
const PARAMETERS = Object.entries(batchParamRules) as [BatchParameter, BatchRule][];

/**
 * The options of a batch request's query. A value the parameter does not take is a 400 naming it,
 * in the read endpoints' shape (extensions.md 6): a typo such as dry_run=yes must never write. Other
 * parameters are ignored, as they always were on these endpoints (the declared query string says so).
 */
export function batchOptions(query: unknown): BatchOptions {
  const given = (query ?? {}) as Record<string, unknown>;
  if (PARAMETERS.every(([name]) => given[name] === undefined)) return NO_OPTIONS;
  const options = { ...NO_OPTIONS };
  for (const [name, rule] of PARAMETERS) {
    const value = given[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidBatchParameter(name, 'Parameter must be given once');
    // An empty value is one the rule does not take, named by the rule's own message as before.
    const problem = paramProblem(rule, value);
    if (problem !== undefined) throw new InvalidBatchParameter(name, problem);
    options[OPTION_OF[name]] = value !== rule.default;
  }
  return options;
}
