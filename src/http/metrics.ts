import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import type { FeedStall } from '../sql/feed-holders.js';
import type { JobFigures } from '../sql/job-upkeep.js';
import { JOB_STATES } from '../sql/jobs.js';
import type { WebhookFigures } from '../sql/webhook-streams.js';
import { VERSION } from '../version.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's metrics: its own registry (tests build many apps), and the metrics listener's URL. */
    metrics: AppMetrics;
  }
}

/** What a written batch did, as the metrics count it (the batch layer's counts have this shape). */
export interface WrittenCounts {
  created: number;
  updated: number;
  ignored: number;
}

/** What the batch route reports after a batch is written. */
export interface BatchMetrics {
  batchWritten(resource: string, items: number, counts: WrittenCounts): void;
}

/** Where the metrics listener is opened: a port of its own, never the API's. */
export interface MetricsListen {
  port: number;
  host: string;
}

/** The label of requests that matched no route: the raw URL would make one series per URL. */
export const UNMATCHED_ROUTE = '(unmatched)';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH_SIZE_BUCKETS = [1, 10, 100, 500, 1000, 2500, 5000, 7500, 10000];

/**
 * The Prometheus metrics of one app instance, in a registry of its own: request counts and latencies by
 * route pattern, method and status; batch sizes and rows created/updated/ignored by resource; database
 * pool usage, read when scraped.
 */
export class AppMetrics implements BatchMetrics {
  readonly registry = new Registry();
  /** The metrics listener's URL (http://host:port/metrics) once it listens; undefined when there is none. */
  url: string | undefined;

  private readonly requests = new Counter({
    name: 'sfa_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status code',
    labelNames: ['route', 'method', 'status_code'] as const,
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'sfa_http_request_duration_seconds',
    help: 'Time from receiving a request to having sent its answer, by route pattern, method and status code',
    labelNames: ['route', 'method', 'status_code'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly batchItems = new Histogram({
    name: 'sfa_batch_items',
    help: 'Items in each batch written, by resource',
    labelNames: ['resource'] as const,
    buckets: BATCH_SIZE_BUCKETS,
    registers: [this.registry],
  });
  private readonly batchRows = new Counter({
    name: 'sfa_batch_rows_total',
    help: 'Rows of written batches by resource and outcome (created, updated, ignored)',
    labelNames: ['resource', 'outcome'] as const,
    registers: [this.registry],
  });

  constructor(db: Database, feedWatch: { readonly latest: FeedStall }) {
    new Gauge({
      name: 'sfa_build_info',
      help: 'The running version (value always 1)',
      labelNames: ['version'] as const,
      registers: [this.registry],
    }).set({ version: VERSION }, 1);
    new Gauge({
      name: 'sfa_db_info',
      help: 'The database backend: postgres (pg pool) or pglite (embedded, one connection) (value always 1)',
      labelNames: ['backend'] as const,
      registers: [this.registry],
    }).set({ backend: db.backend }, 1);
    const gauge = this.gaugeOf.bind(this);
    gauge(
      'sfa_db_pool_max_connections',
      'Connections the pool may open now (DB_POOL_SIZE, fewer for a while after the server refused one as one too many; 1 on PGlite)',
      () => {
        return db.poolStats().max;
      },
    );
    gauge('sfa_db_pool_connections', 'Connections open, idle or in use', () => db.poolStats().total);
    // A figure the database cannot tell gets no series at all, rather than a made-up 0.
    const known = db.poolStats();
    if (known.idle !== undefined) {
      gauge('sfa_db_pool_idle_connections', 'Open connections not in use', () => db.poolStats().idle ?? 0);
    }
    if (known.waiting !== undefined) {
      gauge(
        'sfa_db_pool_waiting_clients',
        'Queries and transactions waiting for a connection',
        () => db.poolStats().waiting ?? 0,
      );
    }
    // Counters read from the database at scrape time: the upkeep counts its own runs.
    const counter = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    counter(
      'sfa_db_upkeep_runs_total',
      'Statistics upkeep runs (ANALYZE, or VACUUM (ANALYZE) on PGlite) after bulk writes, inside the request that crossed the threshold',
      () => db.upkeepStats().runs,
    );
    counter('sfa_db_upkeep_seconds_total', 'Time spent in statistics upkeep', () => db.upkeepStats().seconds);
    // The change feed held back (src/feed/stall-watch.ts), as of the watch's last look.
    gauge(
      'sfa_feed_oldest_xid_age_seconds',
      "Age of the oldest transaction holding an xid on the database server: it holds back every tenant's change feed",
      () => feedWatch.latest.holder?.ageSeconds ?? 0,
    );
    gauge(
      'sfa_feed_held_back_changes',
      'Committed change-feed records not yet served because an older transaction is still open',
      () => feedWatch.latest.heldBack,
    );
    gauge(
      'sfa_feed_held_back_seconds',
      'How long the change feed has been held back (0 when nothing waits): bounds the age of the oldest committed change not yet served',
      () => feedWatch.latest.heldBackSeconds,
    );
  }

  /** A gauge read at scrape time. */
  private gaugeOf(name: string, help: string, read: () => number): Gauge {
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  private readonly webhookAttempts = new Counter({
    name: 'sfa_webhook_attempts_total',
    help: 'Webhook delivery attempts by result (delivered, failed) and whether the attempt repeated a failed one',
    labelNames: ['result', 'repeat'] as const,
    registers: [this.registry],
  });

  /** One attempt of a webhook delivery (src/webhooks/delivery-work.ts). */
  attempt(result: { delivered: boolean }, repeat: boolean): void {
    this.webhookAttempts.inc({ result: result.delivered ? 'delivered' : 'failed', repeat: String(repeat) });
  }

  private readonly webhookChanges = new Counter({
    name: 'sfa_webhook_endpoint_changes_total',
    help: 'Webhook endpoints that started failing (to="failing") or were disabled (to="disabled"), each counted once, when it happened',
    labelNames: ['to'] as const,
    registers: [this.registry],
  });

  /** An endpoint that started failing or was disabled (src/webhooks/delivery-work.ts). */
  endpointChanged(to: 'failing' | 'disabled'): void {
    this.webhookChanges.inc({ to });
  }

  /** Webhook endpoints by status and the oldest change not yet delivered, read at scrape time. */
  watchWebhooks(read: () => Promise<WebhookFigures>): void {
    const figures = oncePerScrape(read);
    new Gauge({
      name: 'sfa_webhook_endpoints',
      help: 'Webhook endpoints by status (active, paused, disabled)',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        // The database away: the series keep their last values rather than failing the whole scrape.
        const now = await figures().catch(() => undefined);
        if (!now) return;
        this.set({ status: 'active' }, now.active);
        this.set({ status: 'paused' }, now.paused);
        this.set({ status: 'disabled' }, now.disabled);
      },
    });
    new Gauge({
      name: 'sfa_webhook_oldest_unsent_seconds',
      help: 'Age of the oldest change an active webhook endpoint has not taken yet (0: every one is up to date)',
      registers: [this.registry],
      async collect() {
        const now = await figures().catch(() => undefined);
        if (now) this.set(now.oldest_unsent_seconds);
      },
    });
  }

  private readonly jobRows = new Counter({
    name: 'sfa_job_rows_written_total',
    help: 'Rows of bulk jobs written, by resource',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  /** Rows a bulk job's block wrote (src/jobs/job-run.ts). */
  jobRowsWritten(resource: string, rows: number): void {
    this.jobRows.inc({ resource }, rows);
  }

  /** Bulk jobs by state and the bytes of their parts still stored, read at scrape time. */
  watchJobs(read: () => Promise<JobFigures>): void {
    const figures = oncePerScrape(read);
    new Gauge({
      name: 'sfa_jobs',
      help: 'Bulk jobs by state (open, queued, validating, writing, succeeded, failed, aborted)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const now = await figures().catch(() => undefined);
        if (!now) return;
        for (const state of JOB_STATES) {
          this.set({ state }, now.states.find((entry) => entry.state === state)?.jobs ?? 0);
        }
      },
    });
    new Gauge({
      name: 'sfa_job_stored_bytes',
      help: "Bytes of unfinished bulk jobs' parts stored in the database",
      registers: [this.registry],
      async collect() {
        const now = await figures().catch(() => undefined);
        if (now) this.set(now.storedBytes);
      },
    });
  }

  /** The batch admission's state at scrape time (src/admission/batch-admission.ts). */
  watchAdmission(admission: {
    readonly counts: { running: number; waiting: number };
    readonly heldBytes: number;
  }): void {
    const gauge = this.gaugeOf.bind(this);
    gauge('sfa_batch_running', 'Batches admitted and being processed', () => admission.counts.running);
    gauge('sfa_batch_waiting', 'Batches waiting for a place', () => admission.counts.waiting);
    gauge(
      'sfa_batch_body_bytes_held',
      'Bytes of batch bodies being received or processed (bounded by BATCH_BODIES_MAX_MB)',
      () => admission.heldBytes,
    );
  }

  requestAnswered(route: string, method: string, statusCode: number, seconds: number): void {
    const labels = { route, method, status_code: String(statusCode) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }

  batchWritten(resource: string, items: number, counts: WrittenCounts): void {
    this.batchItems.observe({ resource }, items);
    this.batchRows.inc({ resource, outcome: 'created' }, counts.created);
    this.batchRows.inc({ resource, outcome: 'updated' }, counts.updated);
    this.batchRows.inc({ resource, outcome: 'ignored' }, counts.ignored);
  }
}

/**
 * A reading shared by the series of one scrape: one statement for several gauges, the first to
 * collect asks and the others share its answer; the next scrape asks again.
 */
function oncePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let latest: Promise<T> | undefined;
  return () => {
    latest ??= read().finally(() => setImmediate(() => (latest = undefined)));
    return latest;
  };
}

/** Opens GET /metrics on a listener of its own; close() stops it and drops open scrape connections. */
export async function serveMetrics(
  metrics: AppMetrics,
  listen: MetricsListen,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
      },
      () => {
        response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * Gives the app its metrics (app.metrics) and counts every answer by its route pattern
 * (request.routeOptions.url, never the raw URL). With metricsPort, the metrics listener opens with the
 * app (on ready) and closes with it; its registry then also gets Node.js process metrics (memory, CPU,
 * event loop).
 */
export function installMetrics(
  app: FastifyInstance,
  db: Database,
  config: { metricsPort?: number | undefined; metricsHost?: string | undefined },
  feedWatch: { readonly latest: FeedStall },
): AppMetrics {
  const metrics = new AppMetrics(db, feedWatch);
  app.decorate('metrics', metrics);
  app.addHook('onResponse', (request, reply, done) => {
    metrics.requestAnswered(
      request.routeOptions.url ?? UNMATCHED_ROUTE,
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  if (config.metricsPort === undefined) return metrics;
  const listen = { port: config.metricsPort, host: config.metricsHost ?? '127.0.0.1' };
  let server: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  app.addHook('onReady', async () => {
    collectDefaultMetrics({ register: metrics.registry });
    server = await serveMetrics(metrics, listen);
    metrics.url = server.url;
    app.log.info({ url: server.url }, 'metrics listening');
  });
  app.addHook('onClose', async () => {
    await server?.close();
  });
  return metrics;
}
