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

/** Each parameter, the values it takes (the first is the default), and the option it sets. */
const PARAMETERS = [
  { name: 'outcomes', values: ['false', 'true'], option: 'outcomes', on: 'true' },
  { name: 'dry_run', values: ['false', 'true'], option: 'dryRun', on: 'true' },
  { name: 'on_invalid', values: ['reject', 'skip'], option: 'skipInvalid', on: 'skip' },
] as const;

export const BATCH_PARAMETERS = PARAMETERS;

/**
 * The options of a batch request's query. A value the parameter does not take is a 400 naming it,
 * in the read endpoints' shape (extensions.md 6): a typo such as dry_run=yes must never write. Other
 * parameters are ignored, as they always were on these endpoints.
 */
export function batchOptions(query: unknown): BatchOptions {
  const given = (query ?? {}) as Record<string, unknown>;
  if (PARAMETERS.every(({ name }) => given[name] === undefined)) return NO_OPTIONS;
  const options = { ...NO_OPTIONS };
  for (const { name, values, option, on } of PARAMETERS) {
    const value = given[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidBatchParameter(name, 'Parameter must be given once');
    if (!(values as readonly string[]).includes(value)) {
      throw new InvalidBatchParameter(name, `Parameter must be one of ${values.join(', ')}`);
    }
    options[option] = value === on;
  }
  return options;
}
