import Type from 'typebox';
import { idParams, querySchema, type RouteDeclaration } from '../../http/route-schema.js';
import { MAX_COLUMNS } from '../../jobs/file-rows.js';
import { createJobBody } from '../../jobs/job-input.js';
import { MAX_PART_BYTES, MAX_PARTS } from '../../jobs/jobs.js';
import type { ParamRule } from '../../read/query-params.js';

/** The bulk jobs' routes (extensions.md 12), each declared once: the route, its check, its document. */

export const JOBS_PATH = '/v1/jobs';
const ONE = `${JOBS_PATH}/:id`;
const tags = ['Bulk jobs'];

export const RESULT_OUTCOMES = ['failed', 'created', 'updated', 'ignored'] as const;
export const LIST_QUERY: Readonly<Record<string, ParamRule>> = {
  limit: { kind: 'integer', min: 1, max: 100, default: 20 },
};
export const RESULTS_QUERY: Readonly<Record<string, ParamRule>> = {
  outcome: { kind: 'choice', values: RESULT_OUTCOMES, default: 'failed' },
};

/** A part's number; the route refuses another with the field error of `part`. */
export const partParams = Type.Object({
  id: Type.String(),
  part: Type.Integer({ minimum: 1, maximum: MAX_PARTS }),
});

export const jobRoutes = {
  create: {
    method: 'POST',
    url: JOBS_PATH,
    schema: {
      operationId: 'createJob',
      tags,
      summary: 'Create a bulk job',
      description:
        'A file of any size for one batch resource, CSV (a header row naming the batch fields, in any order; an empty cell is an absent value; RFC 4180 quoting; UTF-8) or NDJSON (one batch object a line). Send it in parts, then complete: every row is checked by the rules and messages of its batch endpoint, then written in file order in transactions of at most 10,000 rows.',
      body: createJobBody,
    },
  },
  list: {
    method: 'GET',
    url: JOBS_PATH,
    schema: {
      operationId: 'listJobs',
      tags,
      summary: 'List bulk jobs',
      description: "The tenant's jobs, newest first.",
      querystring: querySchema(LIST_QUERY),
    },
  },
  get: {
    method: 'GET',
    url: ONE,
    schema: {
      operationId: 'getJob',
      tags,
      summary: 'One bulk job',
      description: 'The job, its state and its counts as they grow.',
      params: idParams,
    },
  },
  putPart: {
    method: 'PUT',
    url: `${ONE}/parts/:part`,
    schema: {
      operationId: 'putJobPart',
      tags,
      summary: 'Send a part of the file',
      description: `The bytes of part n (1 to ${MAX_PARTS}) of the file, at most ${MAX_PART_BYTES} bytes (100 MiB), stored as they arrive. The parts in number order are the file: a CSV's header row opens part 1, and a part may end mid-row. Sending a part again replaces it; a part whose upload stops halfway leaves the part as it was. Only while the job is open. A header row of more than ${MAX_COLUMNS} columns, a quote never closed, a row longer than the longest allowed or bytes that are not UTF-8 fail the job with a message.`,
      params: partParams,
      consumes: ['text/csv', 'application/x-ndjson'],
      body: Type.String(),
    },
  },
  complete: {
    method: 'POST',
    url: `${ONE}/complete`,
    schema: {
      operationId: 'completeJob',
      tags,
      summary: 'Complete the upload',
      description:
        'The parts are the whole file: the job is queued, then checked and written in the background. A tenant runs one job at a time, and jobs take turns with batch uploads.',
      params: idParams,
    },
  },
  abort: {
    method: 'POST',
    url: `${ONE}/abort`,
    schema: {
      operationId: 'abortJob',
      tags,
      summary: 'Abort a job',
      description: 'While it is open, queued or validating (nothing written yet); its parts are removed.',
      params: idParams,
    },
  },
  results: {
    method: 'GET',
    url: `${ONE}/results`,
    schema: {
      operationId: 'getJobResults',
      tags,
      summary: "A job's results",
      description:
        'NDJSON, one JobResultLine per row of the outcome asked, in line order; the results so far while the job runs. Kept 7 days after the job finished.',
      params: idParams,
      querystring: querySchema(RESULTS_QUERY),
    },
  },
} as const satisfies Record<string, RouteDeclaration>;
