import type { ChildProcess } from 'node:child_process';

export interface ChildOutput {
  /** The exit code; null when a signal ended it. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What a child process printed, once it ended (its stdout and stderr piped). */
export function outputOf(child: ChildProcess): Promise<ChildOutput> {
  let stdout = '';
  let stderr = '';
  // Decoded as a stream: a character split between two chunks stays whole.
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
