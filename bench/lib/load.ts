import http from 'node:http';
import { percentile } from './stats.js';

/** A fixed number of calls at a fixed concurrency: latencies and throughput. */
export interface LoadResult {
  /** Latency of every timed call, ms. */
  samples: number[];
  /** Wall time of the timed calls, ms. */
  wallMs: number;
}

export interface LoadOptions {
  /** Timed calls (after the warm-up). */
  requests: number;
  concurrency: number;
  /** Untimed calls first (connections, JIT, plans, caches). */
  warmup: number;
}

/**
 * Runs call() `requests` times with `concurrency` calls in flight: each worker starts its next call
 * when its last one finished (closed loop). Every call's latency is kept.
 */
export async function runLoad(call: (n: number) => Promise<void>, options: LoadOptions): Promise<LoadResult> {
  const drive = async (total: number, samples: number[] | undefined) => {
    let next = 0;
    const worker = async () => {
      for (let n = next++; n < total; n = next++) {
        const started = performance.now();
        await call(n);
        samples?.push(performance.now() - started);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  };
  await drive(options.warmup, undefined);
  const samples: number[] = [];
  const started = performance.now();
  await drive(options.requests, samples);
  return { samples, wallMs: performance.now() - started };
}

/** Pools several runs of the same side (e.g. the halves of an alternating measurement). */
export function combine(results: readonly LoadResult[]): LoadResult {
  return {
    samples: results.flatMap((r) => r.samples),
    wallMs: results.reduce((sum, r) => sum + r.wallMs, 0),
  };
}

export function summary(result: LoadResult): { p50: number; p99: number; rps: number } {
  return {
    p50: percentile(result.samples, 50),
    p99: percentile(result.samples, 99),
    rps: result.samples.length / (result.wallMs / 1000),
  };
}

export interface Answer {
  status: number;
  body: Buffer;
  headers: http.IncomingHttpHeaders;
}

/**
 * A keep-alive HTTP/1.1 client on loopback (node:http, one socket per concurrent call): lighter on
 * the shared CPU than fetch. Responses are read whole.
 */
export class Client {
  readonly #agent: http.Agent;
  readonly #base: URL;

  constructor(baseUrl: string, sockets: number) {
    this.#base = new URL(baseUrl);
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  request(
    method: 'GET' | 'POST',
    path: string,
    headers: Readonly<Record<string, string>>,
    body?: Uint8Array,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          agent: this.#agent,
          host: this.#base.hostname,
          port: this.#base.port,
          method,
          path,
          headers: body ? { ...headers, 'content-length': String(body.byteLength) } : headers,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              body: Buffer.concat(chunks),
              headers: response.headers,
            }),
          );
          response.on('error', reject);
        },
      );
      request.setTimeout(120_000, () => request.destroy(new Error(`${method} ${path}: no answer in 120 s`)));
      request.on('error', reject);
      request.end(body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
