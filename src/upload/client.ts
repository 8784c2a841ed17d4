import { createReadStream, createWriteStream } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FinalError, HttpError, type RetryNotice, type RetryPolicy, retrying } from './retry.js';
import type { Connection } from './settings.js';

/**
 * The upload command's client of the HTTP API (extensions.md 2, 12): it signs in with POST /token
 * (client credentials), then sends Subscription-Key and the bearer token on every request, and signs
 * in again once when a token is refused (it expired during a long upload). Only HTTP: nothing of the
 * server's code is loaded (docs/decisions/0136-upload-client-runs-light.md).
 */

/** A refused sign-in: the credentials are wrong; no retry helps. */
export class CredentialsError extends FinalError {}

export interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
}

/** A request's body: bytes in memory, or a file's range opened anew for each attempt. */
type Body =
  | { bytes: Buffer }
  | { file: string; start: number; end: number; onBytes?: (chunk: Buffer) => void };

/** A request that neither answers nor moves for this long is given up (and retried). */
const IDLE_MS = 120_000;

function retryAfterMs(headers: IncomingMessage['headers']): number | undefined {
  const value = headers['retry-after'];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** The first error message of a problem body, or the text's start. */
export function problemOf(reply: Reply): string {
  try {
    const body = JSON.parse(reply.text) as {
      errors?: Array<{ field?: string; message?: string }>;
      error?: string;
      error_description?: string;
    };
    const first = body.errors?.[0];
    if (first?.message) return first.field ? `${first.field}: ${first.message}` : first.message;
    if (body.error) return body.error_description ? `${body.error}: ${body.error_description}` : body.error;
  } catch {
    // not JSON
  }
  return reply.text.slice(0, 200) || `HTTP ${reply.status}`;
}

export class ServiceClient {
  private token: string | undefined;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;

  constructor(
    private readonly connection: Connection,
    private readonly policy: RetryPolicy,
    private readonly onRetry: (notice: RetryNotice) => void,
  ) {
    const https = connection.url.startsWith('https:');
    this.agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    this.send = https ? httpsRequest : httpRequest;
  }

  close(): void {
    this.agent.destroy();
  }

  /** One request, one attempt; the whole answer's text. */
  private once(method: string, path: string, headers: Record<string, string>, body?: Body): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      const length = body === undefined ? 0 : 'bytes' in body ? body.bytes.length : body.end - body.start;
      const req = this.send(new URL(path, this.connection.url), {
        method,
        agent: this.agent,
        headers: { ...headers, 'content-length': String(length) },
      });
      req.setTimeout(IDLE_MS, () => req.destroy(new Error(`no answer in ${IDLE_MS / 1000} s`)));
      req.on('error', reject);
      req.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('aborted', () => reject(new Error('the answer was cut')));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      });
      if (body === undefined) req.end();
      else if ('bytes' in body) req.end(body.bytes);
      else {
        // Read from disk as it is sent: backpressure keeps a few chunks in memory, never the part.
        const stream: Readable = createReadStream(body.file, {
          start: body.start,
          end: body.end - 1,
          highWaterMark: 256 * 1024,
        });
        if (body.onBytes) stream.on('data', (chunk) => body.onBytes!(chunk as Buffer));
        if (length === 0) {
          stream.destroy();
          req.end();
        } else pipeline(stream, req).catch(reject);
      }
    });
  }

  /** Signs in (POST /token); retried like any request, but a refusal is a CredentialsError. */
  async signIn(): Promise<void> {
    const { subscriptionKey, clientId, clientSecret } = this.connection;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString();
    const reply = await retrying(
      'sign-in',
      this.policy,
      () =>
        this.checked(
          'POST',
          '/token',
          {
            'content-type': 'application/x-www-form-urlencoded',
            'subscription-key': subscriptionKey,
          },
          { bytes: Buffer.from(form) },
          [200],
        ).catch((error: unknown) => {
          if (error instanceof HttpError && (error.status === 400 || error.status === 401)) {
            throw new CredentialsError(`the service refused the credentials (${error.message})`);
          }
          throw error;
        }),
      this.onRetry,
    );
    this.token = (JSON.parse(reply.text) as { access_token: string }).access_token;
  }

  /** One attempt that throws an HttpError unless the status is one of `ok`. */
  private async checked(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Body | undefined,
    ok: readonly number[],
  ): Promise<Reply> {
    const reply = await this.once(method, path, headers, body);
    if (ok.includes(reply.status)) return reply;
    throw new HttpError(
      reply.status,
      `${method} ${path}: ${reply.status} ${problemOf(reply)}`,
      retryAfterMs(reply.headers),
    );
  }

  /**
   * A request of the API with the tenant's headers, retried (extensions.md 15); `what` names it in
   * the retry notices. A 401 signs in again once (the token may have expired).
   */
  async call(
    what: string,
    method: string,
    path: string,
    options: { json?: unknown; body?: Body; headers?: Record<string, string>; ok?: readonly number[] } = {},
  ): Promise<Reply> {
    if (this.token === undefined) await this.signIn();
    const body =
      options.json === undefined ? options.body : { bytes: Buffer.from(JSON.stringify(options.json)) };
    const ok = options.ok ?? [200];
    let signedInAgain = false;
    return retrying(
      what,
      this.policy,
      async () => {
        const headers = {
          'subscription-key': this.connection.subscriptionKey,
          authorization: `Bearer ${this.token}`,
          ...(options.json === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        };
        try {
          return await this.checked(method, path, headers, body, ok);
        } catch (error) {
          if (error instanceof HttpError && error.status === 401 && !signedInAgain) {
            signedInAgain = true;
            await this.signIn();
            return this.checked(
              method,
              path,
              { ...headers, authorization: `Bearer ${this.token}` },
              body,
              ok,
            );
          }
          throw error;
        }
      },
      this.onRetry,
    );
  }

  /**
   * A GET whose 200 answer is streamed into a file (a job's results may be far larger than memory
   * should hold); retried from the start, the file written anew. The bytes written. `file` may be
   * process.stdout (`jobs results`), which is not ended.
   */
  async saveTo(what: string, path: string, file: string | NodeJS.WritableStream): Promise<number> {
    if (this.token === undefined) await this.signIn();
    return retrying(
      what,
      this.policy,
      () =>
        new Promise<number>((resolve, reject) => {
          const req = this.send(new URL(path, this.connection.url), {
            method: 'GET',
            agent: this.agent,
            headers: {
              'subscription-key': this.connection.subscriptionKey,
              authorization: `Bearer ${this.token}`,
            },
          });
          req.setTimeout(IDLE_MS, () => req.destroy(new Error(`no answer in ${IDLE_MS / 1000} s`)));
          req.on('error', reject);
          req.on('response', (response) => {
            if (response.statusCode !== 200) {
              const chunks: Buffer[] = [];
              response.on('data', (chunk: Buffer) => chunks.push(chunk));
              response.on('end', () => {
                const reply = {
                  status: response.statusCode ?? 0,
                  headers: response.headers,
                  text: Buffer.concat(chunks).toString('utf8'),
                };
                reject(
                  new HttpError(
                    reply.status,
                    `GET ${path}: ${reply.status} ${problemOf(reply)}`,
                    retryAfterMs(reply.headers),
                  ),
                );
              });
              return;
            }
            let bytes = 0;
            response.on('data', (chunk: Buffer) => {
              bytes += chunk.length;
            });
            if (typeof file === 'string')
              pipeline(response, createWriteStream(file)).then(() => resolve(bytes), reject);
            else {
              response.pipe(file, { end: false });
              response.on('end', () => resolve(bytes));
              response.on('error', reject);
            }
          });
          req.end();
        }),
      this.onRetry,
    );
  }

  /** A GET whose answer is JSON. */
  async getJson<T>(what: string, path: string): Promise<T> {
    return JSON.parse((await this.call(what, 'GET', path)).text) as T;
  }
}
