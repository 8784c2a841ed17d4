import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/**
 * A new embedded database starts from a cluster made once, by `npm run build`, instead of running
 * PGlite's initdb in the serving process. initdb runs PostgreSQL's bootstrap inside WebAssembly,
 * with a second PGlite instance and a snapshot of its heap: 5-6 s and about 500 MB of resident
 * memory that the process never gives back (docs/decisions/0108-pglite-template-cluster.md).
 *
 * The template is kept for the PGlite version installed (its files are that version's format):
 * - `cluster/`, the data directory, copied into a new DATA_DIR (a file copy: 0.4 s, no memory);
 * - `cluster.tar`, the same cluster as PGlite's own tarball, loaded by in-memory databases (tests).
 * Missing (a run from source without a build), it is made in a worker thread, whose memory goes
 * back to the system when it ends.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  // .../@electric-sql/pglite/dist/index.cjs -> the package's own package.json
  const manifest = join(dirname(dirname(entry)), 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

export interface ClusterTemplate {
  /** A cold data directory: copy it whole. */
  readonly dir: string;
  /** The same cluster as PGlite's tarball (loadDataDir). */
  readonly tarball: string;
}

/** Where the template of the installed PGlite lives (dist/ is the build's output, not committed). */
export function templatePaths(root = ROOT): ClusterTemplate {
  const base = join(root, 'dist', 'pglite-template', pgliteVersion());
  return { dir: join(base, 'cluster'), tarball: join(base, 'cluster.tar') };
}

/** Both parts are written before the marker, which is written last: a half-made template is not one. */
const READY_MARKER = 'READY';

function isReady(template: ClusterTemplate): boolean {
  return existsSync(join(dirname(template.dir), READY_MARKER));
}

/**
 * Makes the template in this thread, unless it is there: initdb in memory, its tarball, and the tarball loaded into a
 * directory. Written beside the final place and renamed into it, so that processes making it at the
 * same time (parallel test files) each end with a whole template.
 */
export async function makeTemplate(template: ClusterTemplate = templatePaths()): Promise<void> {
  if (isReady(template)) return;
  const base = dirname(template.dir);
  // Its own scratch directory, also against another maker in this process (parallel test files).
  const scratch = `${base}.${randomUUID()}.tmp`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  try {
    const initial = await PGlite.create();
    let tarball: Blob;
    try {
      tarball = await initial.dumpDataDir('none');
    } finally {
      await initial.close();
    }
    writeFileSync(join(scratch, 'cluster.tar'), Buffer.from(await tarball.arrayBuffer()));
    const loaded = await PGlite.create(join(scratch, 'cluster'), { loadDataDir: tarball });
    await loaded.close();
    writeFileSync(join(scratch, READY_MARKER), `${pgliteVersion()}\n`);
    mkdirSync(dirname(base), { recursive: true });
    try {
      renameSync(scratch, base);
    } catch (error) {
      // Another process put a whole template there first: keep it.
      if (!isReady(template)) throw error;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const makerFile = new URL(
  import.meta.url.endsWith('.ts') ? './pglite-template-worker.ts' : './pglite-template-worker.js',
  import.meta.url,
);

/** The template, made first (in a worker thread) when the build did not make it. */
export async function clusterTemplate(): Promise<ClusterTemplate> {
  const template = templatePaths();
  if (isReady(template)) return template;
  await new Promise<void>((resolve, reject) => {
    const worker = new Worker(makerFile);
    worker.once('error', reject);
    worker.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`making the PGlite template failed (exit ${code})`)),
    );
  });
  if (!isReady(template)) throw new Error(`the PGlite template was not made at ${dirname(template.dir)}`);
  return template;
}

/** The file by which PostgreSQL (and PGlite) tells that a directory holds a cluster. */
const CLUSTER_MARKER = 'PG_VERSION';

/** A new data directory: a copy of the template's cluster. Does nothing when one is already there. */
export async function seedDataDir(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, CLUSTER_MARKER))) return;
  const { dir } = await clusterTemplate();
  mkdirSync(dataDir, { recursive: true });
  // PG_VERSION last: a copy cut short leaves no cluster, and the next start copies again.
  cpSync(dir, dataDir, { recursive: true, filter: (source) => source !== join(dir, CLUSTER_MARKER) });
  cpSync(join(dir, CLUSTER_MARKER), join(dataDir, CLUSTER_MARKER));
}

/** The template's tarball, for an in-memory database. */
export async function templateTarball(): Promise<Blob> {
  const { tarball } = await clusterTemplate();
  return new Blob([readFileSync(tarball)]);
}
