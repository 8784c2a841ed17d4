import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

/*
 * The suites live in folders that mirror src/ (and attacks/ for hostile clients); npm test names each
 * folder (Node 20 expands no ** glob, and npm's shell no braces). A suite in a folder the script does
 * not name would never run: this test fails first.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<
  string,
  string
>;

/** The folders a script runs, from its `test/<folder>/*.test.ts` arguments. */
function foldersRunBy(script: string): Set<string> {
  return new Set([...script.matchAll(/\btest\/([a-z-]+)\/\*\.test\.ts\b/g)].map((m) => m[1]!));
}

test('every suite is in a folder that npm test (or test:faults) runs, none at the top of test/', () => {
  const run = foldersRunBy(scripts.test!);
  const faults = foldersRunBy(scripts['test:faults']!);
  assert.deepEqual([...faults], ['faults']);
  const suites = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' }).filter((file) =>
    file.endsWith('.test.ts'),
  );
  assert.ok(suites.length > 50, `${suites.length} suites found`);
  const notRun = suites.filter((file) => {
    const parts = file.split('/');
    return parts.length !== 2 || !(run.has(parts[0]!) || faults.has(parts[0]!));
  });
  assert.deepEqual(notRun, []);
  // Every folder named in the script holds suites (a renamed folder is not left behind).
  const folders = new Set(suites.map((file) => file.split('/')[0]!));
  assert.deepEqual(
    [...run].filter((folder) => !folders.has(folder)),
    [],
  );
});
