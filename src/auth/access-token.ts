import { errors, jwtVerify, SignJWT } from 'jose';
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

/** The subject of a valid token; throws InvalidAccessToken with a description safe to show. */
export async function verifyAccessToken(key: Uint8Array, token: string): Promise<AccessTokenSubject> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      typ: TOKEN_TYPE,
      requiredClaims: ['exp', 'iat', 'sub', TENANT_CLAIM],
    }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) throw new InvalidAccessToken('The access token expired');
    if (error instanceof errors.JOSEError) throw new InvalidAccessToken('The access token is invalid');
    throw error;
  }
  const tenantId = payload[TENANT_CLAIM];
  const clientId = payload.sub;
  if (!Number.isSafeInteger(tenantId) || (tenantId as number) < 1 || typeof clientId !== 'string') {
    throw new InvalidAccessToken('The access token is invalid');
  }
  return { clientId, tenantId: tenantId as number };
}
