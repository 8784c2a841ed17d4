import { DELIMITERS, FORMATS, JOB_RESOURCES, jobInputMessages, ON_INVALID } from '../jobs/job-input.js';
import { JOB_NOT_FOUND } from '../jobs/job-refusal.js';
import { MAX_PART_BYTES, MAX_PARTS } from '../jobs/jobs.js';
import { jobRoutes } from '../routes/v1/job-schemas.js';
import { JOB_STATES } from '../sql/jobs.js';
import { bodyTooLargeResponse } from './errors.js';
import { idempotencyKeyHeader, idempotencyResponses, replayedHeader } from './idempotency.js';
import type { JsonSchema, OpenApiObject } from './json-schema.js';
import { schemaRef } from './json-schema.js';
import {
  commonResponses,
  DATE_TIME,
  fieldErrorsResponse,
  json,
  problemResponse,
} from './management-operations.js';
import { declaredPaths, type OperationAnswers } from './route-operations.js';

/*
 * Bulk jobs (extensions.md 12): the endpoints, the job's shape and the results' line shape, from the
 * same declarations the service checks with.
 */

const nullableDateTime = { anyOf: [DATE_TIME, { type: 'null' }] };
const count = { type: 'integer', minimum: 0 };
const exampleId = 'job_3c1f9a0b7e6d5c4b3a291807';

const jobProperties: Record<string, JsonSchema> = {
  id: { type: 'string', pattern: '^job_[0-9a-f]{24}$' },
  resource: { enum: [...JOB_RESOURCES] },
  format: { enum: [...FORMATS] },
  on_invalid: { enum: [...ON_INVALID] },
  delimiter: {
    anyOf: [{ enum: [...DELIMITERS] }, { type: 'null' }],
    description: "a CSV's delimiter; null for NDJSON",
  },
  state: {
    enum: [...JOB_STATES],
    description:
      'open (taking parts), queued, validating (every row checked, nothing written), writing, then succeeded, failed or aborted',
  },
  error: { type: ['string', 'null'], description: 'why the job failed; null otherwise' },
  rows: {
    type: 'object',
    description: 'the rows so far: they grow while the job runs',
    required: ['received', 'invalid', 'created', 'updated', 'ignored'],
    properties: { received: count, invalid: count, created: count, updated: count, ignored: count },
    additionalProperties: false,
  },
  parts: {
    type: 'object',
    required: ['count', 'bytes'],
    properties: { count, bytes: count },
    additionalProperties: false,
  },
  created_at: DATE_TIME,
  completed_at: { ...nullableDateTime, description: 'when the job was completed (queued)' },
  finished_at: { ...nullableDateTime, description: 'when it succeeded, failed or was aborted' },
};

const exampleJob = {
  id: exampleId,
  resource: 'prices',
  format: 'csv',
  on_invalid: 'reject',
  delimiter: ',',
  state: 'writing',
  error: null,
  rows: { received: 2_000_000, invalid: 0, created: 410_000, updated: 20_000, ignored: 0 },
  parts: { count: 2, bytes: 104_857_600 },
  created_at: '2026-11-25T02:00:00',
  completed_at: '2026-11-25T02:00:41',
  finished_at: null,
};

export function jobSchemas(): Record<string, JsonSchema> {
  return {
    Job: {
      type: 'object',
      description: 'A bulk job of the tenant.',
      required: Object.keys(jobProperties),
      properties: jobProperties,
      additionalProperties: false,
    },
    JobResultLine: {
      type: 'object',
      description:
        'One line of GET /v1/jobs/{id}/results (NDJSON): a row of the asked outcome, in line order. `line` is its line in the file (2: the first data row of a CSV; 1: the first NDJSON line); `key` its key fields as sent; `errors` (failed rows only) the problems, with the messages of its batch endpoint.',
      required: ['line', 'key'],
      properties: {
        line: { type: 'integer', minimum: 1 },
        key: { type: 'object' },
        errors: {
          type: 'array',
          items: {
            type: 'object',
            required: ['field', 'message'],
            properties: { field: { type: ['string', 'null'] }, message: { type: 'string' } },
          },
        },
      },
      additionalProperties: false,
    },
  };
}

const notFound = problemResponse('The tenant has no job of this id.', 404, JOB_NOT_FOUND);
const wrongState = (description: string, message: string) => problemResponse(description, 409, message);
const common = commonResponses;
const jobAnswer = (description: string, example: unknown = exampleJob) => ({
  description,
  headers: replayedHeader,
  content: json(schemaRef('Job'), example),
});

const emptyRows = { received: 0, invalid: 0, created: 0, updated: 0, ignored: 0 };

/** What each job operation answers; what it takes is declared on its route. */
const answers: Record<string, OperationAnswers> = {
  createJob: {
    parameters: [idempotencyKeyHeader],
    requestExample: { resource: 'prices', format: 'csv', on_invalid: 'reject' },
    responses: {
      '201': jobAnswer('The job, open for its parts.', {
        ...exampleJob,
        state: 'open',
        rows: emptyRows,
        parts: { count: 0, bytes: 0 },
        completed_at: null,
      }),
      '400': fieldErrorsResponse('A field refused.', 'format', jobInputMessages.format),
      ...idempotencyResponses,
      ...common,
    },
  },
  listJobs: {
    responses: {
      '200': {
        description: 'The jobs.',
        content: json(
          {
            type: 'object',
            required: ['data'],
            properties: { data: { type: 'array', items: schemaRef('Job') } },
          },
          { data: [exampleJob] },
        ),
      },
      '400': { description: 'A limit out of range.', content: json(schemaRef('ParameterErrors')) },
      ...common,
    },
  },
  getJob: { responses: { '200': jobAnswer('The job.'), '404': notFound, ...common } },
  putJobPart: {
    responses: {
      '200': {
        description: 'The part is stored.',
        content: json(
          {
            type: 'object',
            required: ['part', 'bytes'],
            properties: { part: { type: 'integer' }, bytes: count },
            additionalProperties: false,
          },
          { part: 1, bytes: 52_428_800 },
        ),
      },
      '400': fieldErrorsResponse(
        'A part number out of range.',
        'part',
        `Must be a whole number from 1 to ${MAX_PARTS}`,
      ),
      '404': notFound,
      '409': wrongState(
        'The job is not open.',
        "The job's state is queued: parts are taken only while it is open",
      ),
      '413': bodyTooLargeResponse(MAX_PART_BYTES),
      ...common,
    },
  },
  completeJob: {
    parameters: [idempotencyKeyHeader],
    responses: {
      '202': jobAnswer('The job, queued.', { ...exampleJob, state: 'queued', rows: emptyRows }),
      '400': problemResponse(
        'The job has no part 1, or a gap in its part numbers.',
        400,
        'The job has no part 2: parts are numbered from 1 without a gap',
      ),
      '404': notFound,
      '409': wrongState(
        'The job is not open.',
        "The job's state is queued: only an open job can be completed",
      ),
      ...idempotencyResponses,
      ...common,
    },
  },
  abortJob: {
    parameters: [idempotencyKeyHeader],
    responses: {
      '200': jobAnswer('The job, aborted.', {
        ...exampleJob,
        state: 'aborted',
        finished_at: '2026-11-25T02:01:00',
      }),
      '404': notFound,
      '409': wrongState(
        'The job began writing, or has finished.',
        "The job's state is writing: only a job that has not begun writing can be aborted",
      ),
      ...idempotencyResponses,
      ...common,
    },
  },
  getJobResults: {
    responses: {
      '200': {
        description: 'The rows of that outcome, one JSON object a line.',
        content: {
          'application/x-ndjson': {
            schema: {
              type: 'string',
              description: 'one JobResultLine (components/schemas) per line, each line ending in a newline',
            },
            example:
              '{"line":17,"key":{"product_code":"P-9","price_list":"L1"},"errors":[{"field":"price","message":"Field is required"}]}\n',
          },
        },
      },
      '400': { description: 'An unknown outcome.', content: json(schemaRef('ParameterErrors')) },
      '404': notFound,
      ...common,
    },
  },
};

/** The bulk jobs' operations: their routes' declarations and their answers. */
export const jobPaths = (): Record<string, OpenApiObject> => declaredPaths(Object.values(jobRoutes), answers);
