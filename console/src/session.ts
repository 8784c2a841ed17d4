import createClient, { type Middleware } from 'openapi-fetch';
import { useEffect, useState } from 'preact/hooks';
import type { paths } from '../generated/api';

/**
 * The signed-in tab's credentials (extensions.md 14): the subscription key and the access token from
 * POST /token, kept in this tab's sessionStorage only (a reload stays signed in; another tab, or the
 * browser closed, does not). The client secret is sent once to /token and never kept. No cookie.
 */
export interface Session {
  subscriptionKey: string;
  accessToken: string;
  /** Epoch ms when the token expires. */
  expiresAt: number;
}

const STORAGE = 'sfa-console-session';
let current: Session | null = read();
/** Why the last session ended, shown on the sign-in page. */
let endedBecause: string | null = null;
const listeners = new Set<() => void>();
let expiry: number | undefined;

function read(): Session | null {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORAGE) ?? 'null') as Session | null;
    return stored && stored.expiresAt > Date.now() ? stored : null;
  } catch {
    return null;
  }
}

function changed(): void {
  window.clearTimeout(expiry);
  if (current) {
    sessionStorage.setItem(STORAGE, JSON.stringify(current));
    expiry = window.setTimeout(
      () => signOut('Your session expired: sign in again.'),
      current.expiresAt - Date.now(),
    );
  } else {
    sessionStorage.removeItem(STORAGE);
  }
  for (const listener of listeners) listener();
}

export function signOut(reason: string | null = null): void {
  current = null;
  endedBecause = reason;
  changed();
}

export const endReason = (): string | null => endedBecause;

/** The session, and a re-render of the caller when it starts or ends. */
export function useSession(): Session | null {
  const [, render] = useState(0);
  useEffect(() => {
    const listener = () => render((n) => n + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return current;
}

/** The service's public API, typed from its own OpenAPI document; same origin, no credentials mode. */
export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'omit' });

/** Every request carries the two credentials any client sends; a 401 ends the session. */
const credentials: Middleware = {
  onRequest({ request, schemaPath }) {
    if (current && schemaPath !== '/token') {
      request.headers.set('subscription-key', current.subscriptionKey);
      request.headers.set('authorization', `Bearer ${current.accessToken}`);
    }
    return request;
  },
  onResponse({ response, schemaPath }) {
    if (response.status === 401 && schemaPath !== '/token' && current) {
      signOut('The service no longer accepts your session: sign in again.');
    }
    return response;
  },
};
api.use(credentials);

/** The headers of a request made without the typed client (file parts, results). */
export function authHeaders(): Record<string, string> {
  return current
    ? { 'subscription-key': current.subscriptionKey, authorization: `Bearer ${current.accessToken}` }
    : {};
}

/** A plain fetch of the same API with the credentials; a 401 ends the session. */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  for (const [name, value] of Object.entries(authHeaders())) headers.set(name, value);
  const response = await fetch(path, { ...init, headers, credentials: 'omit' });
  if (response.status === 401 && current)
    signOut('The service no longer accepts your session: sign in again.');
  return response;
}

/** POST /token with the client credentials (a JSON body); the key is checked there too. */
export async function signIn(
  subscriptionKey: string,
  clientId: string,
  clientSecret: string,
): Promise<string | null> {
  const { data, error, response } = await api.POST('/token', {
    headers: { 'subscription-key': subscriptionKey },
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
  } as never);
  if (!data) return messageOf(error, response.status);
  const token = data as { access_token: string; expires_in: number };
  current = {
    subscriptionKey,
    accessToken: token.access_token,
    expiresAt: Date.now() + token.expires_in * 1000,
  };
  endedBecause = null;
  changed();
  return null;
}

interface ErrorItem {
  field?: unknown;
  message?: unknown;
  index?: unknown;
  errors?: unknown;
}

/**
 * The API's own message from an error body, whatever its shape: the spec's `{statusCode, message}` and
 * `{statusCode, errors: [{field, message}]}`, a batch's per-item errors, or OAuth's `{error,
 * error_description}`.
 */
export function messageOf(body: unknown, status: number): string {
  const parts: string[] = [];
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.message === 'string') parts.push(b.message);
    if (typeof b.detail === 'string') parts.push(b.detail);
    if (typeof b.error_description === 'string') parts.push(b.error_description);
    else if (typeof b.error === 'string') parts.push(b.error);
    if (Array.isArray(b.errors)) {
      for (const item of (b.errors as ErrorItem[]).slice(0, 5)) {
        if (Array.isArray(item.errors)) {
          for (const inner of (item.errors as ErrorItem[]).slice(0, 3)) {
            parts.push(
              `item ${String(item.index)}: ${String(inner.field ?? '')} ${String(inner.message ?? '')}`.trim(),
            );
          }
        } else if (typeof item.message === 'string') {
          parts.push(typeof item.field === 'string' ? `${item.field}: ${item.message}` : item.message);
        }
      }
    }
  } else if (typeof body === 'string' && body !== '') {
    parts.push(body);
  }
  return parts.length > 0 ? parts.join(' — ') : `The service answered ${status}.`;
}
