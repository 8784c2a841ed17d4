import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The lock file in DATA_DIR; it holds the pid of the process using the directory. */
export const LOCK_FILE = 'sfa-backoffice.lock';

export class DataDirLocked extends Error {
  override name = 'DataDirLocked';
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Lock files this process holds. */
const heldHere = new Set<string>();

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function holder(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the embedded database's directory for this process: PGlite may be opened by one process at a
 * time, and two would corrupt it. The lock file is created exclusively ('wx') and holds the pid; a lock
 * left by a process that no longer runs is taken over. Returns the release function (also run on exit).
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = holder(path);
      // Our own pid in a lock we do not hold is a previous life's (a container restarted as pid 1).
      const stale = pid === process.pid ? !heldHere.has(path) : pid === undefined || !alive(pid);
      if (!stale) {
        throw new DataDirLocked(
          `data directory ${dataDir} is in use by process ${pid} (a running server or command); stop it first`,
        );
      }
      if (pid === undefined && attempt === 0) {
        // Maybe created an instant ago and not yet written: look again before calling it stale.
        sleep(100);
        continue;
      }
      if (attempt >= 2)
        throw new DataDirLocked(`cannot take the lock ${path}; remove it if no process uses it`);
      // The holder is gone: take the lock over.
      try {
        unlinkSync(path);
      } catch {
        // Someone else removed it first; try again.
      }
    }
  }
  heldHere.add(path);
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    heldHere.delete(path);
    process.off('exit', release);
    if (holder(path) === process.pid) unlinkSync(path);
  };
  process.on('exit', release);
  return release;
}
