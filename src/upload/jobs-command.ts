import { CredentialsError, ServiceClient } from './client.js';
import type { JobView } from './report.js';
import { summaryLine } from './report.js';
import { DEFAULT_RETRY, HttpError } from './retry.js';
import { connectionOf, UsageError } from './settings.js';
import { CommandExit, EXIT } from './upload.js';

/**
 * `sfa-backoffice jobs list | show ID | results ID [--outcome O] | abort ID` (extensions.md 15): the
 * bulk jobs' API from the command line, with the upload command's settings. A refusal of the service
 * (an unknown job, a job that can no longer be aborted) ends with status 1; a usage, connection or
 * credentials error with 3.
 */

export interface JobsOptions {
  url?: string;
  credentials?: string;
  json?: boolean;
  retries: number;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const jobPath = (id: string) => `/v1/jobs/${encodeURIComponent(id)}`;

function line(job: JobView): string {
  return `${job.id}  ${job.resource}  ${job.format}  ${job.state.padEnd(10)}  created ${job.created_at}  rows ${job.rows.received}`;
}

async function withClient<T>(options: JobsOptions, work: (client: ServiceClient) => Promise<T>): Promise<T> {
  const client = new ServiceClient(
    connectionOf(options),
    { ...DEFAULT_RETRY, retries: options.retries },
    (notice) => process.stderr.write(`retrying ${notice.what}: ${notice.reason}\n`),
  );
  try {
    try {
      await client.signIn();
    } catch (error) {
      throw new CommandExit(EXIT.usage, (error as Error).message);
    }
    return await work(client);
  } catch (error) {
    if (error instanceof CommandExit) throw error;
    if (error instanceof UsageError || error instanceof CredentialsError) {
      throw new CommandExit(EXIT.usage, error.message);
    }
    // An answer of the service (404, 409): the job's problem, not the command's use.
    if (error instanceof HttpError && error.status < 500) throw new CommandExit(EXIT.failed, error.message);
    throw new CommandExit(EXIT.usage, (error as Error).message);
  } finally {
    client.close();
  }
}

export function listJobs(options: JobsOptions & { limit: number }): Promise<void> {
  return withClient(options, async (client) => {
    const { data } = await client.getJson<{ data: JobView[] }>('jobs', `/v1/jobs?limit=${options.limit}`);
    if (options.json) out(JSON.stringify(data));
    else if (data.length === 0) out('no jobs');
    else for (const job of data) out(line(job));
  });
}

export function showJob(id: string, options: JobsOptions): Promise<void> {
  return withClient(options, async (client) => {
    const job = await client.getJson<JobView>('job', jobPath(id));
    out(
      options.json
        ? JSON.stringify(job)
        : summaryLine({
            event: 'summary',
            id: job.id,
            state: job.state,
            error: job.error,
            rows: job.rows,
            problems: [],
            exit: 0,
          }),
    );
  });
}

/** Writes the job's results of an outcome to stdout, as the service sends them (NDJSON). */
export function jobResults(id: string, options: JobsOptions & { outcome: string }): Promise<void> {
  return withClient(options, async (client) => {
    await client.saveTo(
      'results',
      `${jobPath(id)}/results?outcome=${encodeURIComponent(options.outcome)}`,
      process.stdout,
    );
  });
}

export function abortJob(id: string, options: JobsOptions): Promise<void> {
  return withClient(options, async (client) => {
    const reply = await client.call('abort', 'POST', `${jobPath(id)}/abort`);
    const job = JSON.parse(reply.text) as JobView;
    out(options.json ? JSON.stringify(job) : `job ${job.id} ${job.state}`);
  });
}
