import type { components } from '../generated/api';
import { api, apiFetch, messageOf } from './session';

export type Job = components['schemas']['Job'];

/** The batch resources a job may load (extensions.md 12), in the spec's order. */
export const JOB_RESOURCES = [
  'stocks',
  'payment-methods',
  'factors',
  'routes',
  'users',
  'prices',
  'products',
  'customers',
  'deliveries',
] as const;

export const FINISHED = new Set(['succeeded', 'failed', 'aborted']);
export const OUTCOMES = ['failed', 'created', 'updated', 'ignored'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Rows of an outcome, from the job's counts. */
export function rowsOf(job: Job, outcome: Outcome): number {
  return outcome === 'failed' ? job.rows.invalid : job.rows[outcome];
}

/** The service's limit of parts; each part is at least 1 MiB (a failed one costs little to send again). */
const MAX_PARTS = 10_000;
const MIN_PART_BYTES = 1024 * 1024;

export interface Part {
  n: number;
  start: number;
  end: number;
}

/** A file's parts: fixed byte ranges, as the command line's (src/upload/parts.ts). */
export function planParts(size: number): Part[] {
  const bytes = Math.max(MIN_PART_BYTES, Math.ceil(size / MAX_PARTS));
  const count = Math.max(1, Math.ceil(size / bytes));
  return Array.from({ length: count }, (_, at) => ({
    n: at + 1,
    start: at * bytes,
    end: Math.min(size, (at + 1) * bytes),
  }));
}

export class PartFailed extends Error {}

/** Tries per part before the upload stops and waits for the user to resume it. */
const TRIES = 3;

const pause = (ms: number) => new Promise((done) => window.setTimeout(done, ms));

/**
 * Sends one part, again after a failure the service may not repeat (no answer, 429, 5xx); a part sent
 * again replaces itself, so nothing before it is sent again.
 */
export async function sendPart(jobId: string, file: Blob, part: Part, type: string): Promise<void> {
  let last = '';
  for (let attempt = 1; attempt <= TRIES; attempt++) {
    let response: Response;
    try {
      response = await apiFetch(`/v1/jobs/${encodeURIComponent(jobId)}/parts/${part.n}`, {
        method: 'PUT',
        headers: { 'content-type': type },
        body: file.slice(part.start, part.end),
      });
    } catch (thrown) {
      last = `part ${part.n} did not reach the service (${(thrown as Error).message})`;
      await pause(250 * attempt);
      continue;
    }
    const body = await response.json().catch(() => undefined);
    if (response.ok) {
      const kept = (body as { bytes?: number } | undefined)?.bytes;
      if (kept === part.end - part.start) return;
      last = `part ${part.n}: the service kept ${kept} bytes of ${part.end - part.start}`;
    } else {
      last = `part ${part.n}: ${messageOf(body, response.status)}`;
      if (response.status !== 429 && response.status < 500) throw new PartFailed(last);
    }
    await pause(250 * attempt);
  }
  throw new PartFailed(last);
}

/** The first failed rows of a job's results (`limit` lines), read from the start of the stream. */
export async function firstProblems(jobId: string, limit: number): Promise<string[]> {
  const response = await apiFetch(`/v1/jobs/${encodeURIComponent(jobId)}/results?outcome=failed`);
  if (!response.ok || !response.body) return [];
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const lines: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (value) text += value;
    const parts = text.split('\n');
    text = done ? '' : (parts.pop() ?? '');
    for (const line of parts) {
      if (line.trim() === '' || lines.length >= limit) continue;
      const row = JSON.parse(line) as { line: number; errors?: Array<{ field?: string; message: string }> };
      const errors = (row.errors ?? []).map((e) => (e.field ? `${e.field}: ${e.message}` : e.message));
      lines.push(`Line ${row.line}: ${errors.join('; ')}`);
    }
    if (done || lines.length >= limit) {
      if (!done) await reader.cancel();
      return lines;
    }
  }
}

export const jobList = () => api.GET('/v1/jobs', { params: { query: { limit: 50 } } });
