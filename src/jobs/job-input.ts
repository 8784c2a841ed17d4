import Type from 'typebox';
import { type Checked, checkBody } from '../fields/body-check.js';
import { batchResources } from '../resources/index.js';

/*
 * The body of POST /v1/jobs (extensions.md 12), declared once: the route takes the schema, its check
 * (checkBody) runs before anything is written, and the OpenAPI document reads it. Every problem is
 * named by its field, in the read side's 400 shape (section 6), unknown fields last; an unknown field
 * is refused, so a misspelt "onInvalid" never leaves the default in place.
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

const m = jobInputMessages;

/** POST /v1/jobs. */
export const createJobBody = Type.Object(
  {
    resource: Type.Enum([...JOB_RESOURCES], {
      description: 'the batch resource whose rows the file holds',
      errorMessage: m.resource,
    }),
    format: Type.Enum([...FORMATS], {
      description: 'deliveries: ndjson only (their items do not fit a CSV row)',
      errorMessage: m.format,
    }),
    on_invalid: Type.Optional(
      Type.Enum([...ON_INVALID], {
        default: 'reject',
        description: 'reject: one invalid row and nothing is written; skip: the valid rows are written',
        errorMessage: m.onInvalid,
      }),
    ),
    delimiter: Type.Optional(
      Type.Enum([...DELIMITERS], { default: ',', description: 'CSV only', errorMessage: m.delimiter }),
    ),
  },
  { additionalProperties: false, errorMessage: { type: m.object, unknown: m.unknown, required: m.required } },
);

/** The rules across fields: a resource whose items do not fit a CSV row, a delimiter of NDJSON. */
function acrossFields(given: Readonly<Record<string, unknown>>): Record<string, string | undefined> {
  const { resource, format } = given;
  return {
    format:
      format === 'csv' && typeof resource === 'string' && NDJSON_ONLY.has(resource)
        ? m.ndjsonOnly(resource)
        : undefined,
    delimiter: format === 'ndjson' ? m.delimiterCsvOnly : undefined,
  };
}

/** The body checked: the job to create, or every problem. */
export function checkJobInput(body: unknown): Checked<JobInput> {
  const checked = checkBody(createJobBody, body, { unknownLast: true, across: acrossFields });
  if (!checked.ok) return checked;
  const { resource, format, on_invalid: onInvalid, delimiter } = checked.value;
  return {
    ok: true,
    value: {
      resource,
      format,
      onInvalid: onInvalid ?? 'reject',
      delimiter: format === 'csv' ? (delimiter ?? ',') : '',
    },
  };
}
