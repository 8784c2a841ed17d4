import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

/*
 * scripts/build.mjs, which `npm run build` and `npm start` run (decision 0140), on a project of its
 * own shape in a scratch directory: one source file, a migration, and a template maker that counts
 * its runs, so that what each call did is seen in what it left.
 */

const BUILD = fileURLToPath(new URL('../../scripts/build.mjs', import.meta.url));

function scratchProject() {
  const root = mkdtempSync(join(tmpdir(), 'sfa-build-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src/db/migrations'), { recursive: true });
  writeFileSync(join(root, 'src/answer.ts'), 'export const answer: number = 42;\n');
  writeFileSync(join(root, 'src/db/migrations/001.sql'), 'SELECT 1;\n');
  // The real project's template maker is compiled from src/; here it is already in dist/.
  mkdirSync(join(root, 'dist/db'), { recursive: true });
  writeFileSync(
    join(root, 'dist/db/pglite-template-worker.js'),
    "import { appendFileSync } from 'node:fs';\nappendFileSync('template-runs', 'x');\n",
  );
  writeFileSync(join(root, 'package-lock.json'), '{}\n');
  writeFileSync(
    join(root, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        target: 'ES2023',
        rootDir: 'src',
        outDir: 'dist',
        tsBuildInfoFile: 'dist/tsconfig.tsbuildinfo',
        types: [],
        skipLibCheck: true,
      },
      include: ['src'],
    }),
  );
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  const build = (...args: string[]) => execFileSync(process.execPath, [BUILD, ...args], { cwd: root });
  const templateRuns = () =>
    existsSync(join(root, 'template-runs')) ? readFileSync(join(root, 'template-runs'), 'utf8').length : 0;
  return { root, build, templateRuns };
}

describe('the build script', () => {
  test('builds, copies the migrations, makes the template, and leaves its stamp', () => {
    const { root, build, templateRuns } = scratchProject();
    build();
    assert.match(readFileSync(join(root, 'dist/answer.js'), 'utf8'), /answer = 42/);
    assert.equal(readFileSync(join(root, 'dist/db/migrations/001.sql'), 'utf8'), 'SELECT 1;\n');
    assert.equal(templateRuns(), 1);
    assert.ok(existsSync(join(root, 'dist/.built')));
  });

  test('--if-changed does nothing when no input is newer than the stamp, and builds when one is', () => {
    const { root, build, templateRuns } = scratchProject();
    build('--if-changed');
    assert.equal(templateRuns(), 1, 'no stamp yet: a full build');
    build('--if-changed');
    assert.equal(templateRuns(), 1, 'nothing changed: nothing ran');

    // A source edited after the build (a minute later, whatever the file system's time resolution).
    writeFileSync(join(root, 'src/answer.ts'), 'export const answer: number = 43;\n');
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'src/answer.ts'), later, later);
    build('--if-changed');
    assert.equal(templateRuns(), 2);
    assert.match(readFileSync(join(root, 'dist/answer.js'), 'utf8'), /answer = 43/);

    // New packages installed: the lock file is an input too.
    const evenLater = new Date(Date.now() + 120_000);
    utimesSync(join(root, 'package-lock.json'), evenLater, evenLater);
    build('--if-changed');
    assert.equal(templateRuns(), 3);
  });

  test('without --if-changed it always builds; a type error fails it and leaves no new stamp', () => {
    const { root, build, templateRuns } = scratchProject();
    build();
    build();
    assert.equal(templateRuns(), 2);
    writeFileSync(join(root, 'src/answer.ts'), 'export const answer: number = "forty-two";\n');
    assert.throws(() => build('--if-changed'), { status: 1 });
    assert.equal(templateRuns(), 2, 'a failed compile goes no further');
    assert.throws(() => build('--if-changed'), { status: 1 }, 'and is tried again at the next start');
  });
});
