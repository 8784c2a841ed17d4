import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Client secrets are checked only when a token is issued, so they get a slow, memory-hard hash:
 * scrypt with N=2^14, r=8, p=1 (about 16 MiB and tens of milliseconds). Stored as
 * `scrypt$N$r$p$salt$hash`, so the parameters can be raised later without breaking stored secrets.
 */
const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function derive(secret: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_LENGTH, { ...options, maxmem: 256 * options.N! * options.r! }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashClientSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(secret, salt, { N, r: R, p: P });
  return ['scrypt', N, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

export async function clientSecretMatches(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const options = { N: Number(n), r: Number(r), p: Number(p) };
  // Parameters come from our own table, but an absurd value must not exhaust memory.
  if (!(options.N >= 2 && options.N <= 1 << 20 && options.r >= 1 && options.r <= 32 && options.p === 1)) {
    return false;
  }
  const expected = Buffer.from(hash, 'base64url');
  const presented = await derive(secret, Buffer.from(salt, 'base64url'), options);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

let decoy: Promise<string> | undefined;

/** A stored hash of a secret nobody has: checking against it costs what a real check costs. */
export function decoyClientSecretHash(): Promise<string> {
  decoy ??= hashClientSecret(randomBytes(32).toString('base64url'));
  return decoy;
}
