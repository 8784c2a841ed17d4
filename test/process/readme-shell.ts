import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { outputOf } from '../helpers/child-output.js';

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

/** The sh block of a README section, by its heading (without the "## "). */
export function readmeBlock(heading: string): string {
  const section = README.split(/^## /m).find((part) => part.startsWith(`${heading}\n`));
  assert.ok(section, `the README has a "## ${heading}" section`);
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
