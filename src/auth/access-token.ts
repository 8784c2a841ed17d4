import { errors, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { randomSecret } from './secrets.js';

/**
 * Access tokens are JWTs (RFC 9068 profile) signed with HS256 under one server key: the service both
 * issues and checks them, so a shared secret is enough. Only HS256 is accepted, never the token's own
 * choice of algorithm, and issuer, audience, type and expiry are always checked.
 */
export const TOKEN_ISSUER = 'sfa-backoffice';
export const TOKEN_AUDIENCE = 'sfa-backoffice-api';
export const TOKEN_TYPE = 'at+jwt';
/** The claim that names the tenant the token was issued for. */
export const TENANT_CLAIM = 'tid';

export interface AccessTokenSubject {
  clientId: string;
  tenantId: number;
}

export class InvalidAccessToken extends Error {
  override name = 'InvalidAccessToken';
}

export async function signAccessToken(
  key: Uint8Array,
  subject: AccessTokenSubject,
  ttlSeconds: number,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ [TENANT_CLAIM]: subject.tenantId })
    .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYPE })
    .setIssuer(TOKEN_ISSUER)
    .setAudience(TOKEN_AUDIENCE)
    .setSubject(subject.clientId)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(randomSecret(12))
    .sign(key);
}

export interface VerifiedAccessToken {
  subject: AccessTokenSubject;
  /** The exp claim: seconds since the epoch. */
  expiresAt: number;
}

/** The largest TOKEN_TTL_SECONDS: the lifetime bound of a token when none is given. */
export const MAX_TOKEN_LIFETIME_SECONDS = 86_400;
/** How far ahead of this server's clock a token's iat may be: another instance's clock may run ahead. */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * Whether each of the three parts is canonical unpadded base64url: no `=`, and no unused bits set in
 * its last character. Decoders ignore both, so without this one token had several spellings that all
 * verified (and each was a new entry of the token cache).
 */
function isCanonicalCompactJws(token: string): boolean {
  const parts = token.split('.');
  return (
    parts.length === 3 &&
    parts.every(
      (part) =>
        /^[A-Za-z0-9_-]+$/.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part,
    )
  );
}

/**
 * The subject and expiry of a valid token; throws InvalidAccessToken with a description safe to show.
 * Besides jose's checks: the token is spelled canonically, its iat is not in the future (beyond the
 * clock skew), and it lives no longer than maxLifetimeSeconds (TOKEN_TTL_SECONDS): a token signed with
 * the real key but dated years ahead, or valid for a century, is refused.
 */
export async function verifyAccessToken(
  key: Uint8Array,
  token: string,
  maxLifetimeSeconds: number = MAX_TOKEN_LIFETIME_SECONDS,
  nowMs: number = Date.now(),
): Promise<VerifiedAccessToken> {
  if (!isCanonicalCompactJws(token)) throw new InvalidAccessToken('The access token is invalid');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      typ: TOKEN_TYPE,
      requiredClaims: ['exp', 'iat', 'sub', TENANT_CLAIM],
      currentDate: new Date(nowMs),
    }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) throw new InvalidAccessToken('The access token expired');
    if (error instanceof errors.JOSEError) throw new InvalidAccessToken('The access token is invalid');
    throw error;
  }
  const tenantId = payload[TENANT_CLAIM];
  const clientId = payload.sub;
  const expiresAt = payload.exp;
  if (
    !Number.isSafeInteger(tenantId) ||
    (tenantId as number) < 1 ||
    typeof clientId !== 'string' ||
    typeof expiresAt !== 'number' ||
    typeof payload.iat !== 'number' ||
    payload.iat > Math.floor(nowMs / 1000) + CLOCK_SKEW_SECONDS ||
    // Both stamps come from the issuer's one clock: no skew is owed here.
    expiresAt - payload.iat > maxLifetimeSeconds
  ) {
    throw new InvalidAccessToken('The access token is invalid');
  }
  return { subject: { clientId, tenantId: tenantId as number }, expiresAt };
}

/**
 * Whether a token that expires at expiresAt (seconds) is still valid at nowMs: the rule jose applies
 * with no clock tolerance, so that a cached token expires exactly when jose would refuse it.
 */
export function isUnexpired(expiresAt: number, nowMs: number): boolean {
  return expiresAt > Math.floor(nowMs / 1000);
}
