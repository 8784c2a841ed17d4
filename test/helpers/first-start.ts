import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { printedValue } from '../../kit/welcome-text.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface FirstStart {
  /** The new embedded data directory the server holds. */
  dataDir: string;
  /** Everything printed on stdout so far: the welcome text, then the JSON log lines. */
  stdout(): string;
  /** A value of the welcome text by its label: 'subscription key', 'client id', 'base URL', ... */
  printed(label: string): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs `sfa-backoffice serve` (src/cli.ts, what bin/sfa-backoffice.js runs once built) on a new, empty
 * embedded data directory, and waits for the demo tenant's welcome text (its last line is the curl
 * command) and for until(stdout). Killed and cleaned up after the test.
 */
export async function startFirstServe(
  env: Record<string, string> = {},
  until: (stdout: string) => boolean = () => true,
): Promise<FirstStart> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sfa-first-start-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    ...env,
    DATA_DIR: dataDir,
  };
  delete environment.DATABASE_URL;
  if (env.METRICS_PORT === undefined) delete environment.METRICS_PORT;
  const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve'], {
    cwd: ROOT,
    env: environment,
  });
  let stdout = '';
  server.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  server.stderr.resume();
  const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  after(() => server.kill('SIGKILL'));
  const deadline = Date.now() + 60_000;
  while (!/curl [^\n]*\n/.test(stdout) || !until(stdout)) {
    assert.ok(Date.now() < deadline, `the server did not start: ${stdout}`);
    assert.equal(server.exitCode, null, `serve ended: ${stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    dataDir,
    stdout: () => stdout,
    printed(label) {
      const value = printedValue(stdout, label);
      assert.ok(value, `"${label}" printed at first start`);
      return value;
    },
    async stop() {
      server.kill('SIGTERM');
      return exited;
    },
  };
}
