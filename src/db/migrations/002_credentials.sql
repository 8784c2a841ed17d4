-- Credentials of the tenants (extensions.md 1 and 2) and the server's own secrets.
-- Nothing here holds a usable secret of a client: keys and client secrets are stored as hashes.
-- A request names its credential before its tenant is known, so each credential id is unique on its
-- own too; when the data is distributed by tenant these small tables stay whole on every node.

-- Secrets of the server itself (the token-signing key, the key-hashing key), generated on first use.
CREATE TABLE settings (
  name text PRIMARY KEY,
  value text NOT NULL,
  created_at timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')
);

-- key_hash is HMAC-SHA256 of the whole key under the server's key-hashing secret (base64url).
CREATE TABLE subscription_keys (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  key_id varchar(32) NOT NULL,
  key_hash text NOT NULL,
  created_at timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'),
  revoked_at timestamp,
  PRIMARY KEY (tenant_id, key_id),
  UNIQUE (key_id)
);

-- secret_hash is scrypt of the client secret, with its parameters and salt (see src/auth/client-secret.ts).
CREATE TABLE api_clients (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  client_id varchar(64) NOT NULL,
  secret_hash text NOT NULL,
  created_at timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'),
  revoked_at timestamp,
  PRIMARY KEY (tenant_id, client_id),
  UNIQUE (client_id)
);
