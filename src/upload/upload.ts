import { stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { CredentialsError, ServiceClient } from './client.js';
import { completionKey, creationKey, type JobOptions, partBytes, partsHeld, planParts } from './parts.js';
import { type JobView, type Reporter, reporterFor } from './report.js';
import { firstProblems, resultsPath, saveFailedRows } from './results.js';
import { DEFAULT_RETRY, HttpError, type RetryPolicy } from './retry.js';
import { connectionOf, UsageError } from './settings.js';

/**
 * `sfa-backoffice upload` (extensions.md 15): creates a bulk job (or takes the open one --job names),
 * sends the file's parts from disk, completes the job, follows it to its end, writes the failed rows'
 * results beside the file and ends with the spec's exit status.
 */

export const EXIT = { succeeded: 0, failed: 1, skipped: 2, usage: 3 } as const;

/** The error that ends the command with a status (the message goes to stderr). */
export class CommandExit extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface UploadOptions {
  resource?: string;
  format?: string;
  onInvalid?: string;
  delimiter?: string;
  results?: string;
  json?: boolean;
  wait: boolean;
  job?: string;
  url?: string;
  credentials?: string;
  retries: number;
}

const FINISHED = new Set(['succeeded', 'failed', 'aborted']);
/** How often a running job is asked for its state: well within the key's rate limit. */
const POLL_MS = 250;

function formatOf(file: string, given: string | undefined): string {
  if (given !== undefined) return given;
  const ext = extname(file).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  throw new UsageError(`cannot tell the format from "${ext || 'no extension'}": give --format csv or ndjson`);
}

const jobPath = (id: string) => `/v1/jobs/${encodeURIComponent(id)}`;

/**
 * Creates the job under the file's Idempotency-Key and reads its state now (a replayed answer is the
 * job as it was created). A job that key made and that was aborted since is passed over: running the
 * command again then means trying again, under a key chained after the aborted job's.
 */
async function createJob(client: ServiceClient, keyOf: (after: string) => string, request: JobOptions) {
  let after = '';
  for (;;) {
    const reply = await client.call('create job', 'POST', '/v1/jobs', {
      json: request,
      headers: { 'idempotency-key': keyOf(after) },
      ok: [201],
    });
    const created = JSON.parse(reply.text) as JobView;
    if (reply.headers['idempotent-replayed'] !== 'true') return created;
    const current = await client.getJson<JobView>('job', jobPath(created.id));
    if (current.state !== 'aborted') return current;
    after = current.id;
  }
}

async function follow(client: ServiceClient, report: Reporter, start: JobView): Promise<JobView> {
  let job = start;
  let state = '';
  for (;;) {
    if (job.state !== state) {
      state = job.state;
      report.event({ event: 'state', id: job.id, state, rows: job.rows });
    }
    report.rows(job);
    if (FINISHED.has(job.state)) return job;
    await new Promise((done) => setTimeout(done, POLL_MS));
    job = await client.getJson<JobView>('job', jobPath(job.id));
  }
}

export async function upload(file: string, options: UploadOptions): Promise<number> {
  const path = resolve(file);
  const stats = await stat(path).catch((error: Error) => {
    throw new UsageError(`cannot read ${file}: ${error.message}`);
  });
  if (!stats.isFile()) throw new UsageError(`${file} is not a file`);
  if (options.job === undefined && options.resource === undefined) {
    throw new UsageError('give --resource R (or --job ID to resume a job)');
  }
  const size = partBytes();
  const parts = planParts(stats.size, size);
  const connection = connectionOf(options);
  const policy: RetryPolicy = { ...DEFAULT_RETRY, retries: options.retries };
  const report = reporterFor(options.json === true);
  const client = new ServiceClient(connection, policy, (notice) =>
    report.event({ event: 'retry', ...notice }),
  );
  let job: JobView | undefined;
  try {
    try {
      await client.signIn();
      if (options.job !== undefined) {
        job = await client.getJson<JobView>('job', jobPath(options.job));
      } else {
        const request: JobOptions = {
          resource: options.resource!,
          format: formatOf(file, options.format),
          on_invalid: options.onInvalid ?? 'reject',
          ...(options.delimiter === undefined ? {} : { delimiter: options.delimiter }),
        };
        job = await createJob(client, (after) => creationKey(path, stats, request, size, after), request);
      }
    } catch (error) {
      // Nothing was made yet: a usage, connection or credentials error (exit status 3).
      if (error instanceof CredentialsError || error instanceof UsageError) throw error;
      throw new UsageError((error as Error).message);
    }
    return await run(client, report, job, { path, parts, size: stats.size, options });
  } catch (error) {
    if (error instanceof UsageError || error instanceof CredentialsError || job === undefined) {
      throw new CommandExit(EXIT.usage, (error as Error).message);
    }
    if (error instanceof CommandExit) throw error;
    throw new CommandExit(
      EXIT.failed,
      `${(error as Error).message} (job ${job.id}; an open job resumes with: upload --job ${job.id} FILE)`,
    );
  } finally {
    report.close();
    client.close();
  }
}

async function run(
  client: ServiceClient,
  report: Reporter,
  start: JobView,
  file: { path: string; parts: ReturnType<typeof planParts>; size: number; options: UploadOptions },
): Promise<number> {
  let job = start;
  const { parts, options } = file;
  if (job.state === 'open') {
    const held = partsHeld(parts, job.parts);
    report.event({
      event: 'job',
      id: job.id,
      state: job.state,
      resumed: held > 0 || options.job !== undefined,
      parts_held: held,
      parts: parts.length,
    });
    const type = job.format === 'csv' ? 'text/csv' : 'application/x-ndjson';
    for (const part of parts.slice(held)) {
      const reply = await client.call(`part ${part.n}`, 'PUT', `${jobPath(job.id)}/parts/${part.n}`, {
        headers: { 'content-type': type },
        body: {
          file: file.path,
          start: part.start,
          end: part.end,
          onBytes: (c) => report.bytes(c, file.size),
        },
      });
      const taken = JSON.parse(reply.text) as { bytes: number };
      if (taken.bytes !== part.end - part.start) {
        throw new Error(`part ${part.n}: the service kept ${taken.bytes} bytes of ${part.end - part.start}`);
      }
      report.event({
        event: 'part',
        id: job.id,
        part: part.n,
        parts: parts.length,
        bytes: taken.bytes,
        sent_bytes: part.end,
        total_bytes: file.size,
      });
    }
    const completed = await client.call('complete', 'POST', `${jobPath(job.id)}/complete`, {
      headers: { 'idempotency-key': completionKey(job.id) },
      ok: [202],
    });
    job = JSON.parse(completed.text) as JobView;
  } else {
    report.event({
      event: 'job',
      id: job.id,
      state: job.state,
      resumed: true,
      parts_held: job.parts.count,
      parts: job.parts.count,
    });
  }
  if (!options.wait) {
    report.event({ event: 'queued', id: job.id });
    return EXIT.succeeded;
  }
  job = await follow(client, report, job);
  let problems: string[] = [];
  if (job.rows.invalid > 0) {
    const target = resultsPath(file.path, options.results);
    const bytes = await saveFailedRows(client, job.id, target);
    report.event({ event: 'results', id: job.id, outcome: 'failed', file: target, bytes });
    problems = await firstProblems(target);
  }
  const exit = job.state !== 'succeeded' ? EXIT.failed : job.rows.invalid > 0 ? EXIT.skipped : EXIT.succeeded;
  report.event({
    event: 'summary',
    id: job.id,
    state: job.state,
    error: job.error,
    rows: job.rows,
    problems,
    exit,
  });
  return exit;
}

export { HttpError };
