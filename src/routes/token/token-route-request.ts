import { checkBody } from '../../fields/body-check.js';
import { oauthProblems } from '../../http/problems.js';
import { tokenRequestBody } from './token-schema.js';

/** What a POST /token request asks for, read from its body and Authorization header. */
export interface TokenRequest {
  grantType: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** The client authenticated with HTTP Basic: a refusal must then be a 401 with a Basic challenge. */
  viaBasic: boolean;
}

const NAMES = Object.keys(tokenRequestBody.properties) as Name[];
type Name = keyof typeof tokenRequestBody.properties;

/**
 * The body's parameters, checked by its declaration (src/routes/token/token-schema.ts). RFC 6749 3.2:
 * no parameter twice; a parameter without a value counts as omitted; others are ignored. The first
 * problem is the answer (RFC 6749 5.2 has one error_description).
 */
function bodyParameters(body: unknown): Partial<Record<Name, string>> {
  if (body === undefined || body === null) return {};
  let given = body;
  if (body instanceof URLSearchParams) {
    const form: Record<string, string> = {};
    for (const name of NAMES) {
      const values = body.getAll(name);
      if (values.length > 1) throw oauthProblems.invalidRequest(`${name} must not be repeated`);
      if (values[0] !== undefined) form[name] = values[0];
    }
    given = form;
  }
  const present =
    typeof given === 'object' && !Array.isArray(given)
      ? Object.fromEntries(Object.entries(given).filter(([, value]) => value !== null && value !== ''))
      : given;
  const checked = checkBody(tokenRequestBody, present);
  // grant_type missing or naming another grant is answered after the client's credentials are read.
  const grant = (present as Record<string, unknown>).grant_type;
  const refused = checked.ok
    ? undefined
    : checked.errors.find(
        ({ field }) => field !== 'grant_type' || !(grant === undefined || typeof grant === 'string'),
      );
  if (refused) throw oauthProblems.invalidRequest(refused.message);
  const parameters: Partial<Record<Name, string>> = {};
  for (const name of NAMES) {
    const value = (present as Record<string, unknown>)[name];
    if (typeof value === 'string') parameters[name] = value;
  }
  return parameters;
}

/** application/x-www-form-urlencoded decoding of one Basic credential part (RFC 6749 2.3.1). */
function formDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** The client id and secret of an Authorization header; undefined when there is none. */
function basicCredentials(authorization: string | undefined): { id: string; secret: string } | undefined {
  if (authorization === undefined || authorization === '') return undefined;
  const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(authorization);
  const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 1) {
    throw oauthProblems.invalidClient(
      'Client authentication must be HTTP Basic or in the request body',
      true,
    );
  }
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

export function readTokenRequest(body: unknown, authorization: string | undefined): TokenRequest {
  const parameters = bodyParameters(body);
  const basic = basicCredentials(authorization);
  if (basic === undefined) {
    return {
      grantType: parameters.grant_type,
      clientId: parameters.client_id,
      clientSecret: parameters.client_secret,
      viaBasic: false,
    };
  }
  // Some clients repeat client_id in the body next to Basic; a second secret is a second method.
  if (parameters.client_secret !== undefined || (parameters.client_id ?? basic.id) !== basic.id) {
    throw oauthProblems.invalidRequest(
      'Use one client authentication method: HTTP Basic or client_id and client_secret in the body',
    );
  }
  return { grantType: parameters.grant_type, clientId: basic.id, clientSecret: basic.secret, viaBasic: true };
}
