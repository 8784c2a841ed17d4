import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TenantClient } from '../../kit/tenant-client.js';
import { DEFAULT_ADMISSION } from '../../src/admission/admission-limits.js';
import { BatchAdmission } from '../../src/admission/batch-admission.js';
import type { Database, Queryable } from '../../src/db/database.js';
import type { WarnLog } from '../../src/jobs/job-run-context.js';
import { DEFAULT_JOB_SETTINGS, type JobSettings, type JobWork, jobWork } from '../../src/jobs/job-work.js';

/*
 * Bulk jobs as an integrator drives them (extensions.md 12): create, send the parts, complete, wait,
 * read the job and its results; and the background work's rounds, run by the test instead of a timer.
 */

export interface JobRequest {
  resource: string;
  format: 'csv' | 'ndjson';
  on_invalid?: 'reject' | 'skip';
  delimiter?: string;
}

/** PUT one part's bytes. */
export function putPart(
  tenant: TenantClient,
  id: string,
  part: number,
  body: string | Uint8Array,
  type = 'text/csv',
) {
  return tenant.send({
    method: 'PUT',
    path: `/v1/jobs/${id}/parts/${part}`,
    headers: { 'content-type': type },
    body,
  });
}

/** A job created, its parts sent in order and completed; returns its id. */
export async function submitJob(
  tenant: TenantClient,
  request: JobRequest,
  parts: readonly (string | Uint8Array)[],
): Promise<string> {
  const created = await tenant.post('/v1/jobs', request);
  if (created.status !== 201) throw new Error(`job not created: ${created.text}`);
  const id = created.body.id as string;
  const type = request.format === 'csv' ? 'text/csv' : 'application/x-ndjson';
  for (const [at, part] of parts.entries()) {
    const sent = await putPart(tenant, id, at + 1, part, type);
    if (sent.status !== 200) throw new Error(`part ${at + 1} not taken: ${sent.text}`);
  }
  const completed = await postEmpty(tenant, `/v1/jobs/${id}/complete`);
  if (completed.status !== 202) throw new Error(`job not completed: ${completed.text}`);
  return id;
}

/** A POST without a body (complete, abort). */
export function postEmpty(tenant: TenantClient, path: string, headers: Record<string, string> = {}) {
  return tenant.send({ method: 'POST', path, headers });
}

/** Runs the jobs' background work until no job is left to take: rounds, each waited for. */
export async function runJobs(app: FastifyInstance): Promise<void> {
  for (let round = 0; round < 50; round++) {
    await app.jobs.round();
    if (app.jobs.running === 0) return;
    await app.jobs.settled();
  }
  throw new Error('jobs still running after 50 rounds');
}

/** The job's results of one outcome, parsed line by line (and the text, to check its form). */
export async function resultsOf(tenant: TenantClient, id: string, outcome: string) {
  const answer = await tenant.get(`/v1/jobs/${id}/results?outcome=${outcome}`);
  if (answer.status !== 200) throw new Error(`results: ${answer.text}`);
  const lines = answer.text === '' ? [] : answer.text.trimEnd().split('\n');
  return lines.map(
    (line) => JSON.parse(line) as { line: number; key: Record<string, unknown>; errors?: unknown[] },
  );
}

/** A CSV text from a header and rows (cells quoted when they need it). */
export function csv(header: readonly string[], rows: readonly (readonly string[])[], newline = '\n'): string {
  const cell = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
  return [header, ...rows].map((row) => row.map(cell).join(',')).join(newline) + newline;
}

/**
 * The key of every change of the resource in the tenant's feed, walked page by page (API only), once
 * at least `atLeast` are served. Another suite's transaction open on a shared PostgreSQL rightly holds
 * the feed back until it ends (xids are the cluster's): the walk then goes on from its last cursor, as
 * an integrator's next poll would (at most 60 s). More keys than expected are duplicates, which the
 * caller's count catches.
 */
export async function feedKeys(
  tenant: TenantClient,
  resource: string,
  key: readonly string[],
  atLeast = 0,
): Promise<string[]> {
  const keys: string[] = [];
  const deadline = Date.now() + 60_000;
  let after = '';
  for (;;) {
    const page = await tenant.get(`/v1/changes?resource=${resource}&limit=1000${after}`);
    if (page.status !== 200) throw new Error(`feed: ${page.text}`);
    for (const row of page.body.data) keys.push(key.map((name) => row[name]).join('/'));
    after = `&after=${page.body.next}`;
    if (page.body.data.length === 1000) continue;
    if (keys.length >= atLeast || Date.now() > deadline) return keys;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Checks `read()` every few ms until `done` holds (at most `ms`); its last value. */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  ms = 120_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out: ${what} (${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The instance holding the job now (null: none). */
export async function holderOf(db: Queryable, id: string): Promise<string | null> {
  const [job] = await db.query<{ holder: string | null }>('SELECT holder FROM jobs WHERE id = $1', [id]);
  return job!.holder;
}

/**
 * Runs to their end the jobs queued in the database (other suites' leftovers on a shared PostgreSQL),
 * as any instance would: the next claim is then the caller's own job.
 */
export async function drainJobs(db: Database): Promise<void> {
  const work = testJobWork(db, `drain-${randomUUID()}`, { settings: { maxRunning: 4 } });
  for (let round = 0; round < 100; round++) {
    await work.round();
    if (work.running === 0) break;
    await work.settled();
  }
  await work.close?.();
}

/**
 * The background work of jobs of one instance, as the app builds it, for tests that drive its rounds
 * themselves: the default settings with `settings` over them, an admission of its own unless one is
 * given, and a silent log.
 */
export function testJobWork(
  db: Database,
  holder: string,
  options: {
    settings?: Partial<JobSettings>;
    admission?: BatchAdmission;
    /** Where its warnings go (else nowhere). */
    log?: WarnLog;
  } = {},
): JobWork {
  return jobWork(
    db,
    holder,
    { ...DEFAULT_JOB_SETTINGS, ...options.settings },
    options.admission ?? new BatchAdmission(DEFAULT_ADMISSION),
    () => {},
    options.log ?? { warn() {} },
  );
}

/**
 * The database as one instance sees it, each of its transactions that starts while job `id` is
 * writing run through `around` (numbered from 1: the writing's blocks in line order, then the job's
 * end), which runs it by calling `run`. The check's transactions (its rows staged, state validating)
 * pass as they are. For tests that stop or hold a run at a chosen block, whatever the machine's speed.
 */
export function aroundWritingTransactions(
  db: Database,
  id: string,
  around: (block: number, run: () => Promise<unknown>) => Promise<unknown>,
): Database {
  let blocks = 0;
  return new Proxy(db, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name !== 'transaction') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: Parameters<Database['transaction']>) => {
        const [job] = await target.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id]);
        if (job?.state !== 'writing') return target.transaction(...args);
        return around(++blocks, () => target.transaction(...args));
      };
    },
  });
}
