import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../kit/free-port.js';
import { median } from './stats.js';

/**
 * `npm start` as a user restarts it (issue 39: under 3 s when nothing changed since the last build):
 * npm, the build script's check (decision 0140) and the server, on an embedded DATA_DIR made by an
 * uncounted first start, timed from spawn to the first 200 of /ready.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface NpmStartRestarts {
  medianMs: number;
  minMs: number;
  maxMs: number;
  restarts: number;
}

export const NPM_START_BAR_MS = 3_000;

async function readyWithin(url: string, exited: () => boolean): Promise<void> {
  for (;;) {
    if (exited()) throw new Error('npm start exited before it was ready');
    try {
      if ((await fetch(`${url}/ready`)).status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 10));
  }
}

async function startOnce(env: NodeJS.ProcessEnv): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  // Its own process group: npm, the shell it runs the script in and the server stop together.
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...env, PORT: String(port) },
    detached: true,
    stdio: 'ignore',
  });
  let exited = false;
  const gone = new Promise<void>((done) =>
    child.on('exit', () => {
      exited = true;
      done();
    }),
  );
  try {
    await readyWithin(`http://127.0.0.1:${port}`, () => exited);
    return performance.now() - started;
  } finally {
    if (!exited) process.kill(-child.pid!, 'SIGTERM');
    await gone;
  }
}

export async function measureNpmStartRestarts(
  env: NodeJS.ProcessEnv,
  restarts = 5,
): Promise<NpmStartRestarts> {
  await startOnce(env); // makes the data directory (and the build, if one is due): not counted
  const times: number[] = [];
  for (let n = 0; n < restarts; n++) times.push(await startOnce(env));
  return { medianMs: median(times), minMs: Math.min(...times), maxMs: Math.max(...times), restarts };
}
