import { oauthProblems } from '../../http/problems.js';

/** What a POST /token request asks for, read from its body and Authorization header. */
export interface TokenRequest {
  grantType: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** The client authenticated with HTTP Basic: a refusal must then be a 401 with a Basic challenge. */
  viaBasic: boolean;
}

const NAMES = ['grant_type', 'client_id', 'client_secret'] as const;
type Name = (typeof NAMES)[number];

/** RFC 6749 3.2: no parameter twice; a parameter without a value counts as omitted. */
function bodyParameters(body: unknown): Partial<Record<Name, string>> {
  const parameters: Partial<Record<Name, string>> = {};
  if (body === undefined || body === null) return parameters;
  if (body instanceof URLSearchParams) {
    for (const name of NAMES) {
      const values = body.getAll(name);
      if (values.length > 1) throw oauthProblems.invalidRequest(`${name} must not be repeated`);
      if (values[0]) parameters[name] = values[0];
    }
    return parameters;
  }
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw oauthProblems.invalidRequest('The request body must be a form or a JSON object');
  }
  for (const name of NAMES) {
    const value = (body as Record<string, unknown>)[name];
    if (value === undefined || value === null || value === '') continue;
    if (typeof value !== 'string') throw oauthProblems.invalidRequest(`${name} must be a string`);
    parameters[name] = value;
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
