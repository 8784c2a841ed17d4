import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AddressNotAllowed, type AddressRules, connectionLookup, type Resolve } from './addresses.js';

/*
 * One attempt of a webhook delivery (extensions.md 11): an HTTP POST that counts as delivered only on
 * a 2xx within the time allowed. Redirects are never followed; the endpoint's response body is read
 * at most up to a small cap, then the connection is dropped, and never kept or logged: only its
 * status, the error and the time it took are told, as the deliveries log shows them.
 */

/** The most of a response body read before the connection is dropped: enough to end a small answer cleanly. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** How long the rest of an answer is read after its status: a body is never waited for longer. */
const DRAIN_MS = 1_000;
/** A 429's or 503's Retry-After is honoured up to an hour. */
const MAX_RETRY_AFTER_SECONDS = 3600;

export interface AttemptResult {
  /** A 2xx arrived within the time allowed. */
  delivered: boolean;
  /** The endpoint's status, or null when none arrived (timeout, refused, address not allowed). */
  statusCode: number | null;
  /** Why it was not delivered, in the deliveries log's words; null when delivered. */
  error: string | null;
  durationMs: number;
  /** A 429's or 503's Retry-After, in seconds (at most an hour), when it gave one. */
  retryAfterSeconds?: number;
}

export interface Attempt {
  url: URL;
  headers: Readonly<Record<string, string>>;
  body: string;
  /** The whole attempt, connection included: 15 s for deliveries. */
  timeoutMs: number;
  rules: AddressRules;
  resolve: Resolve;
  /**
   * Aborted when the attempt is no longer this instance's to make (its lease lost): the connection is
   * dropped at once and the result is `error` "aborted", which the caller does not record.
   */
  signal?: AbortSignal;
}

/** Retry-After as seconds (a number, or an HTTP date from now), at most an hour; undefined if unreadable. */
export function retryAfterSeconds(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const seconds = /^\d+$/.test(text) ? Number(text) : (Date.parse(text) - nowMs) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Math.ceil(seconds)));
}

/** An error of the attempt in the deliveries log's words; never the endpoint's own text. */
function describe(error: unknown): string {
  if (error instanceof AddressNotAllowed) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'name not resolved';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      if (typeof code === 'string' && /CERT|TLS|SSL|SIGNATURE|EPROTO/.test(code)) return `TLS error: ${code}`;
      return 'connection failed';
  }
}

/** Sends one attempt; never throws: every failure is a result. */
export function attemptDelivery(attempt: Attempt): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((done) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      done({ ...result, durationMs: elapsed() });
    };
    const fail = (error: string) => finish({ delivered: false, statusCode: null, error });
    let lookup: ReturnType<typeof connectionLookup>;
    try {
      lookup = connectionLookup(attempt.url, attempt.rules, attempt.resolve);
    } catch (error) {
      fail(describe(error));
      return;
    }
    const send = attempt.url.protocol === 'https:' ? httpsRequest : httpRequest;
    let request: ReturnType<typeof send>;
    try {
      request = send(attempt.url, {
        method: 'POST',
        headers: { ...attempt.headers, 'content-length': String(Buffer.byteLength(attempt.body)) },
        lookup,
        agent: false,
      });
    } catch {
      // A URL or a header Node refuses to send: a failed attempt, never a throw.
      fail('request refused');
      return;
    }
    timer = setTimeout(() => {
      fail('timeout');
      request.destroy();
    }, attempt.timeoutMs);
    const abort = () => {
      fail('aborted');
      request.destroy();
    };
    if (attempt.signal?.aborted) abort();
    attempt.signal?.addEventListener('abort', abort, { once: true });
    request.on('close', () => attempt.signal?.removeEventListener('abort', abort));
    request.on('error', (error) => fail(describe(error)));
    request.on('response', (response) => {
      const statusCode = response.statusCode ?? null;
      const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
      const wait =
        statusCode === 429 || statusCode === 503
          ? retryAfterSeconds(response.headers['retry-after'])
          : undefined;
      let error: string | null = null;
      if (!delivered)
        error =
          statusCode !== null && statusCode >= 300 && statusCode < 400
            ? 'redirect not followed'
            : `status ${statusCode}`;
      finish({ delivered, statusCode, error, ...(wait !== undefined ? { retryAfterSeconds: wait } : {}) });
      // The status decides. The body is read and dropped, at most MAX_RESPONSE_BYTES of it for at most
      // DRAIN_MS, so a small answer ends the connection cleanly and an endless one cannot hold it.
      let read = 0;
      const cutOff = setTimeout(() => request.destroy(), DRAIN_MS);
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) request.destroy();
      });
      response.on('error', () => {});
      response.on('close', () => clearTimeout(cutOff));
    });
    request.end(attempt.body);
  });
}
