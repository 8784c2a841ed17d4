import { createReadStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { ServiceClient } from './client.js';

/**
 * The failed rows' results of a job, written where extensions.md 15 says: beside the file as
 * FILE.failed.ndjson, or in the folder `--results` names. Written to a temporary name first and then
 * renamed, so a results file is never half written.
 */

export function resultsPath(file: string, dir: string | undefined): string {
  return join(resolve(dir ?? dirname(file)), `${basename(file)}.failed.ndjson`);
}

/** Saves the job's failed rows to `target`; its bytes. */
export async function saveFailedRows(client: ServiceClient, id: string, target: string): Promise<number> {
  const temporary = `${target}.${process.pid}.part`;
  try {
    const bytes = await client.saveTo(
      'results',
      `/v1/jobs/${encodeURIComponent(id)}/results?outcome=failed`,
      temporary,
    );
    await rename(temporary, target);
    return bytes;
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

interface FailedLine {
  line: number;
  errors?: Array<{ field?: string; message: string }>;
}

/** The first `count` failed rows of a results file, each as "line N: field: message". */
export async function firstProblems(file: string, count = 3): Promise<string[]> {
  const problems: string[] = [];
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const text of lines) {
    if (problems.length >= count) break;
    if (text === '') continue;
    const row = JSON.parse(text) as FailedLine;
    const error = row.errors?.[0];
    const what = error ? `${error.field ? `${error.field}: ` : ''}${error.message}` : 'invalid';
    problems.push(`line ${row.line}: ${what}`);
  }
  lines.close();
  return problems;
}
