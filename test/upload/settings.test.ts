import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { connectionOf, UsageError } from '../../src/upload/settings.js';

/*
 * The upload command's settings (src/upload/settings.ts): the credentials file is the caller's
 * choice, the environment fills what it lacks, and no error repeats a secret.
 */

function credentialsFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-settings-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'acme.json');
  writeFileSync(path, text);
  return path;
}

test('a malformed credentials file is refused without quoting its text (the secret)', () => {
  const secret = 'sk-very-secret-0123456789';
  const path = credentialsFile(`{"clientId": "c1", "clientSecret": ${secret}}`);
  assert.throws(
    () => connectionOf({ credentials: path }, {}),
    (error: unknown) =>
      error instanceof UsageError &&
      /not valid JSON/.test(error.message) &&
      !error.message.includes(secret.slice(0, 6)),
  );
});

test('the file wins over the environment, which fills what the file lacks', () => {
  const path = credentialsFile(JSON.stringify({ clientId: 'from-file', clientSecret: 'file-secret' }));
  const connection = connectionOf(
    { credentials: path },
    { SFA_CLIENT_ID: 'from-env', SFA_SUBSCRIPTION_KEY: 'env-key', SFA_URL: 'http://127.0.0.1:4000' },
  );
  assert.equal(connection.clientId, 'from-file');
  assert.equal(connection.clientSecret, 'file-secret');
  assert.equal(connection.subscriptionKey, 'env-key');
  assert.equal(connection.url, 'http://127.0.0.1:4000');
});
