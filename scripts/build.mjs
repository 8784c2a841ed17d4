// `npm run build`, and the first step of `npm start`, in one process: TypeScript's build mode compiles
// only what changed since the last build (decision 0132), the SQL migrations travel to dist/ beside
// the code that reads them (tsc compiles only TypeScript), and the PGlite template is made if it is
// missing (src/db/pglite-template.ts). A build that ends well leaves dist/.built.
//
// With --if-changed (`npm start`), nothing runs when no input is newer than dist/.built: the same
// timestamp rule tsc's build mode applies first, without loading the compiler (decision 0140).
// Paths are the working directory's: npm runs scripts from the project's root.
import { cpSync, existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildConsole, CONSOLE_INPUTS } from './build-console.mjs';

const STAMP = 'dist/.built';
/**
 * What a build reads: the sources (migrations too), the compiler's settings, the installed packages,
 * and the console's sources and the OpenAPI document its API types come from (scripts/build-console.mjs).
 * A project without the console has no such paths.
 */
const INPUTS = ['src', 'tsconfig.json', 'package-lock.json', ...CONSOLE_INPUTS].filter((path) => existsSync(path));

/** The newest modification time under the paths, in ms. */
function newestChange(paths) {
  let newest = 0;
  for (const path of paths) {
    const stats = statSync(path);
    newest = Math.max(newest, stats.mtimeMs);
    if (stats.isDirectory()) {
      newest = Math.max(newest, newestChange(readdirSync(path).map((name) => join(path, name))));
    }
  }
  return newest;
}

function builtAt() {
  try {
    return statSync(STAMP).mtimeMs;
  } catch {
    return undefined;
  }
}

const built = process.argv.includes('--if-changed') ? builtAt() : undefined;
if (built === undefined || newestChange(INPUTS) >= built) {
  // The stamp bears the time the build began: a source saved while it ran is newer, and builds next.
  const began = new Date();
  const { default: ts } = await import('typescript');
  const report = ts.createDiagnosticReporter(ts.sys, process.stdout.isTTY);
  const host = ts.createSolutionBuilderHost(ts.sys, undefined, report, report);
  if (ts.createSolutionBuilder(host, ['tsconfig.json'], {}).build() !== ts.ExitStatus.Success) process.exit(1);

  rmSync('dist/db/migrations', { recursive: true, force: true });
  cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });

  await import(pathToFileURL(resolve('dist/db/pglite-template-worker.js')).href);
  await buildConsole();
  writeFileSync(STAMP, `${began.toISOString()}\n`);
  utimesSync(STAMP, began, began);
}
