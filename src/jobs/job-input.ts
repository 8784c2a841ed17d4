import { batchResources } from '../resources/index.js';

/*
 * The body of POST /v1/jobs (extensions.md 12), checked before anything is written: every problem
 * named by its field, in the read side's 400 shape (section 6); an unknown field is refused, so a
 * misspelt "onInvalid" never leaves the default in place.
 */

export const JOB_RESOURCES: readonly string[] = batchResources.map((resource) => resource.name);
/** Resources whose items do not fit a CSV row (an items array in each). */
export const NDJSON_ONLY: ReadonlySet<string> = new Set(
  batchResources.filter((resource) => resource.childPosition !== undefined).map((resource) => resource.name),
);
export const FORMATS = ['csv', 'ndjson'] as const;
export const ON_INVALID = ['reject', 'skip'] as const;
/** The CSV delimiters a job takes: comma (the default), semicolon, tab, vertical bar. */
export const DELIMITERS = [',', ';', '\t', '|'] as const;

export const jobInputMessages = {
  object: 'Request body must be a JSON object',
  unknown: 'Unknown field',
  required: 'Field is required',
  resource: `Must be one of ${JOB_RESOURCES.join(', ')}`,
  format: 'Must be "csv" or "ndjson"',
  ndjsonOnly: (resource: string) => `${resource} take only "ndjson": their items do not fit a CSV row`,
  onInvalid: 'Must be "reject" or "skip"',
  delimiter: 'Must be one of ",", ";", "\\t" (tab), "|"',
  delimiterCsvOnly: 'Only a CSV file has a delimiter',
} as const;

export interface JobInput {
  resource: string;
  format: 'csv' | 'ndjson';
  onInvalid: 'reject' | 'skip';
  /** "" for NDJSON. */
  delimiter: string;
}

export interface JobFieldError {
  field: string | null;
  message: string;
}

const FIELDS = ['resource', 'format', 'on_invalid', 'delimiter'];

const oneOf = <T extends string>(values: readonly T[], value: unknown): value is T =>
  typeof value === 'string' && (values as readonly string[]).includes(value);

/** The body checked: the job to create, or every problem. */
export function checkJobInput(
  body: unknown,
): { ok: true; value: JobInput } | { ok: false; errors: JobFieldError[] } {
  const m = jobInputMessages;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, errors: [{ field: null, message: m.object }] };
  }
  const given = body as Record<string, unknown>;
  const errors: JobFieldError[] = [];
  const { resource, format, on_invalid: onInvalid = 'reject', delimiter } = given;
  if (resource === undefined) errors.push({ field: 'resource', message: m.required });
  else if (!oneOf(JOB_RESOURCES, resource)) errors.push({ field: 'resource', message: m.resource });
  if (format === undefined) errors.push({ field: 'format', message: m.required });
  else if (!oneOf(FORMATS, format)) errors.push({ field: 'format', message: m.format });
  else if (format === 'csv' && typeof resource === 'string' && NDJSON_ONLY.has(resource)) {
    errors.push({ field: 'format', message: m.ndjsonOnly(resource) });
  }
  if (!oneOf(ON_INVALID, onInvalid)) errors.push({ field: 'on_invalid', message: m.onInvalid });
  if (delimiter !== undefined) {
    if (format === 'ndjson') errors.push({ field: 'delimiter', message: m.delimiterCsvOnly });
    else if (!oneOf(DELIMITERS, delimiter)) errors.push({ field: 'delimiter', message: m.delimiter });
  }
  for (const name of Object.keys(given)) {
    if (!FIELDS.includes(name)) errors.push({ field: name, message: m.unknown });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: {
      resource: resource as string,
      format: format as JobInput['format'],
      onInvalid: onInvalid as JobInput['onInvalid'],
      delimiter: format === 'csv' ? ((delimiter as string | undefined) ?? ',') : '',
    },
  };
}
