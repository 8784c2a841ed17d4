import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { outputOf } from '../helpers/child-output.js';
import { startFirstServe } from '../helpers/first-start.js';

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

/** The sh block of a README section, by its heading (without the "## "). */
export function readmeBlock(heading: string): string {
  // A "##" section up to its first "###", or a "###" subsection.
  const section = README.split(/^###? /m).find((part) => part.startsWith(`${heading}\n`));
  assert.ok(section, `the README has a "## ${heading}" or "### ${heading}" section`);
  const text = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(text, `"${heading}" has a sh block`);
  return text;
}

/** Runs a script with bash in cwd; its output once it exited 0 (else the test fails with both). */
export async function runBash(script: string, cwd: string): Promise<{ stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await outputOf(spawn('bash', ['-c', script], { cwd }));
  assert.equal(code, 0, `the script failed:\n${stderr}\n${stdout}`);
  return { stdout, stderr };
}

/** The token and AUTH lines of Getting started ("With `AUTH` as in Getting started"). */
function authLines(): string {
  const lines = readmeBlock('Getting started').replace(/\\\n/g, ' ').split('\n');
  const auth = lines.filter((line) => /^(TOKEN|AUTH)=/.test(line));
  assert.equal(auth.length, 2, 'Getting started sets TOKEN and AUTH');
  return auth.join('\n');
}

/**
 * A freshly started server (closed after the test), a scratch folder, and the shell lines that set
 * what Getting started sets: BASE, the printed credentials, TOKEN and AUTH. `env`: settings of the
 * server beyond the defaults.
 */
export async function servedShell(
  env: Record<string, string> = {},
): Promise<{ cwd: string; prelude: string }> {
  const server = await startFirstServe({ LOG_LEVEL: 'warn', ...env });
  after(() => server.stop());
  const cwd = mkdtempSync(join(tmpdir(), 'sfa-readme-recipes-'));
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const prelude = [
    `BASE='${server.printed('base URL')}'`,
    `KEY='${server.printed('subscription key')}'`,
    `CLIENT_ID='${server.printed('client id')}'`,
    `CLIENT_SECRET='${server.printed('client secret')}'`,
    authLines(),
  ].join('\n');
  return { cwd, prelude };
}

/** The delivery loop block's answers, in order, each checked; the run's refused code from them. */
export function deliveryLoopAnswers(output: string) {
  const answers = output
    .replace(/}\s*{"statusCode"/g, '}\n{"statusCode"')
    .replace(/}\s*{"data"/g, '}\n{"data"')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  assert.equal(answers.length, 6, output);
  const [created, acknowledged, rejected, listed, requeued, again] = answers;
  assert.equal(created.statusCode, 201, output);
  assert.equal(acknowledged.message, 'Deliveries acknowledged');
  assert.deepEqual(acknowledged.notFound, []);
  assert.deepEqual(rejected, { statusCode: 200, message: 'Deliveries rejected', rejected: 1, notFound: [] });
  const [[code, reason]] = listed.data.map((d: { code: string; rejection_reason: string }) => [
    d.code,
    d.rejection_reason,
  ]);
  assert.match(code, /^ENT-\d+-2$/);
  assert.equal(reason, `Customer of ${code} unknown to the ERP`);
  assert.equal(listed.data.length, 1);
  assert.deepEqual(requeued, { statusCode: 200, message: 'Deliveries requeued', requeued: 1, notFound: [] });
  assert.deepEqual(again, {
    statusCode: 200,
    message: 'Deliveries acknowledged',
    acknowledged: 1,
    notFound: [],
  });
  return { created, acknowledged };
}
