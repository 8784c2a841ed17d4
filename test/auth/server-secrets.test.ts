import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serverSecret } from '../../src/auth/server-secrets.js';
import { backends } from '../helpers/backends.js';

/*
 * A server secret once stored is only read: an instance that starts, or first needs a secret, while
 * its database takes no writes (a standby during a failover) still verifies keys and tokens.
 */
for (const backend of backends()) {
  describe(`server secrets (${backend.name})`, () => {
    test('a stored secret is read inside a read-only transaction', async () => {
      const db = await backend.db();
      const stored = await serverSecret(db, 'key_hashing');
      const read = await db.transaction(async (tx) => {
        await tx.query('SET TRANSACTION READ ONLY');
        return serverSecret(tx, 'key_hashing');
      });
      assert.deepEqual(read, stored);
    });

    test('every caller gets the one secret stored first', async () => {
      const db = await backend.db();
      const secrets = await Promise.all(Array.from({ length: 4 }, () => serverSecret(db, 'webhook_sealing')));
      for (const secret of secrets) assert.deepEqual(secret, secrets[0]);
      assert.equal(secrets[0]!.length, 32);
    });
  });
}
