import type { FastifyInstance, InjectOptions } from 'fastify';

/**
 * How a request reaches the service: in process through the app's inject (tests that build the app)
 * or over real HTTP to a listening server (served tests, the fault suite, the benchmarks' sign-in).
 * Both answer alike, so what sends requests on top (kit/token.ts, kit/tenant-client.ts) is written
 * once for both.
 */

export interface ServiceRequest {
  /** GET when absent. */
  readonly method?: string;
  /** The path with its query string. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  /** HTTP only: no answer within it is status 0 (default 60 s, so a hung server fails the test). */
  readonly timeoutMs?: number;
}

export interface Answer {
  /** 0 when no answer came (connection refused or cut, timed out): the fault suite needs to see it. */
  readonly status: number;
  /** The text parsed as JSON, or else the text itself. */
  readonly body: any;
  /** The answer exactly as sent (JSON.parse would round numbers), or the network error. */
  readonly text: string;
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** From sending to the whole answer read. */
  readonly ms: number;
}

export interface Transport {
  send(request: ServiceRequest): Promise<Answer>;
}

export interface InjectTransport extends Transport {
  /** The app the requests go to, for what a test does with it besides (its metrics, close()). */
  readonly app: FastifyInstance;
}

export interface HttpTransport extends Transport {
  /** http://127.0.0.1:PORT, no trailing slash. */
  readonly baseUrl: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function answer(status: number, text: string, headers: Record<string, string>, startedAt: number): Answer {
  return { status, body: parsed(text), text, headers, ms: Date.now() - startedAt };
}

/** inject gives numbers and arrays as header values; fetch gives strings: both become strings. */
function headerStrings(headers: Record<string, unknown>): Record<string, string> {
  const strings: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) strings[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return strings;
}

/** Requests through app.inject: no socket, so no timeout and no status 0 (a throw is a bug). */
export function injectTransport(app: FastifyInstance): InjectTransport {
  return {
    app,
    async send({ method = 'GET', path, headers, body }) {
      const startedAt = Date.now();
      const response = await app.inject({
        method: method as InjectOptions['method'],
        url: path,
        headers,
        payload: body,
      });
      return answer(response.statusCode, response.body, headerStrings(response.headers), startedAt);
    },
  };
}

/** Requests over HTTP to the server listening at baseUrl (http://127.0.0.1:PORT). */
export function httpTransport(baseUrl: string): HttpTransport {
  return {
    baseUrl,
    async send({ method = 'GET', path, headers, body, timeoutMs = DEFAULT_TIMEOUT_MS }) {
      const startedAt = Date.now();
      try {
        const response = await fetch(`${baseUrl}${path}`, {
          method,
          headers,
          // Bytes as a Buffer: fetch's types take no bare Uint8Array.
          body: body instanceof Uint8Array ? Buffer.from(body) : body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text();
        return answer(response.status, text, headerStrings(Object.fromEntries(response.headers)), startedAt);
      } catch (error) {
        // fetch's own message is "fetch failed"; the cause says what (ECONNREFUSED, socket closed).
        return answer(0, String((error as Error).cause ?? error), {}, startedAt);
      }
    },
  };
}
