import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { batchResources } from '../../src/resources/index.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

test('the README starts a newcomer with the two commands', () => {
  const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  assert.match(firstBlock, /^npm ci && npm start\b/m);
  assert.match(firstBlock, /^npm ci && npm test\b/m);
});

test("CI runs exactly the README's test command", () => {
  const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');
  assert.match(ci, /^npm ci && npm test \|\| exit 1$/m);
});

test('the README lists every batch endpoint with the body limit the code enforces', () => {
  for (const resource of batchResources) {
    const row = readme.split('\n').find((line) => line.startsWith(`| \`${resource.path}\``));
    assert.ok(row, `${resource.path} is in the README`);
    const mib = /\| (\d+) MiB \|$/.exec(row)?.[1];
    assert.equal(Number(mib) * 1024 * 1024, resource.bodyLimit, `${resource.path} body limit`);
  }
});
