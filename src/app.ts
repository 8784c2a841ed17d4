import { lookup } from 'node:dns/promises';
import { constants as zlibConstants } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { admissionFor } from './admission/batch-admission.js';
import { once, serverSecret } from './auth/server-secrets.js';
import { BackgroundLoops } from './background/background-loops.js';
import { newInstanceId } from './background/background-work.js';
import { writtenCountsFold } from './background/written-counts-fold.js';
import { type Config, DEFAULT_FEED_STALL_WARN_SECONDS } from './config.js';
import type { Database } from './db/database.js';
import { assertDatabaseWritable } from './db/readiness.js';
import { servedGeneration } from './feed/generation.js';
import { FEED_WATCH_EVERY_MS, FeedStallWatch } from './feed/stall-watch.js';
import { installActivityRecording } from './http/activity-recording.js';
import { clientErrorHandler } from './http/client-errors.js';
import { registerConsole } from './http/console-routes.js';
import { installErrorHandling } from './http/error-handler.js';
import { installGracefulClose } from './http/graceful-close.js';
import { charsetOf, isUtf8Charset, parseJsonRequest } from './http/json-body.js';
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from './http/keyed-reply.js';
import { loggerOptions, RequestLogController, requestId } from './http/logger.js';
import { installMetrics } from './http/metrics.js';
import { DATABASE_RETRY_AFTER_SECONDS, problems } from './http/problems.js';
import type { WindowClock } from './http/rate-limit.js';
import { type RequestsInFlight, requestsInFlight } from './http/requests-in-flight.js';
import { installSecurityHeaders } from './http/security-headers.js';
import { idempotencyExpirySweep } from './idempotency/expiry-sweep.js';
import { DEFAULT_JOB_SETTINGS, type JobSettings, type JobWork, jobWork } from './jobs/job-work.js';
import { registerDocs } from './openapi/docs-routes.js';
import { batchResources } from './resources/index.js';
import { registerBatchRoute } from './routes/api/batch-route.js';
import { operationsRoutes } from './routes/operations-schemas.js';
import { createAuth } from './routes/token/auth-routes.js';
import { registerActivityRoutes } from './routes/v1/activity-routes.js';
import { registerDeliveryStateRoutes } from './routes/v1/delivery-state-routes.js';
import { registerJobRoutes } from './routes/v1/job-routes.js';
import { registerReadRoutes } from './routes/v1/read-routes.js';
import { registerWebhookRoutes } from './routes/v1/webhook-routes.js';
import { jobFigures } from './sql/job-upkeep.js';
import { webhookFigures } from './sql/webhook-streams.js';
import { VERSION } from './version.js';
import { addressRules } from './webhooks/addresses.js';
import {
  DEFAULT_DELIVERY_SETTINGS,
  type DeliverySettings,
  type WebhookDeliveries,
  webhookDeliveries,
} from './webhooks/delivery-work.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What holds the change feed back, as of its last look (a background work: `background`). */
    feedWatch: FeedStallWatch;
    /** The background work of this instance (src/background/): started by serve, stopped on close. */
    background: BackgroundLoops;
    /** Webhook deliveries (one of the background works): tests run a round, then wait for its turns. */
    webhookDeliveries: WebhookDeliveries;
    /** Bulk jobs (one of the background works): tests run a round, then wait for its runs. */
    jobs: JobWork;
    /** The requests being answered now: serve hands memory back once there are none for a while. */
    requestsInFlight: RequestsInFlight;
  }
  interface FastifyRequest {
    /** The tenant whose rows this request may see and change; set by the authentication guard. */
    tenantId: number;
  }
}

export interface AppOptions {
  db: Database;
  /**
   * Token signing: TOKEN_SECRET (else a secret generated and kept in the database) and token lifetime.
   * With metricsPort, GET /metrics is served on a listener of its own, opened and closed with the app.
   */
  config: Pick<Config, 'tokenSecret' | 'tokenTtlSeconds'> &
    Partial<
      Pick<Config, 'metricsPort' | 'metricsHost' | 'rateLimitPerMinute' | 'trustProxy' | 'publicBaseUrl'>
    > &
    Partial<
      Pick<
        Config,
        | 'batchConcurrency'
        | 'batchConcurrencyPerTenant'
        | 'batchQueuePerTenant'
        | 'batchBodiesMaxBytes'
        | 'idempotencyTtlSeconds'
        | 'feedStallWarnSeconds'
        | 'jobLeaseSeconds'
        | 'webhookAllowedNetworks'
        | 'console'
      >
    >;
  /** Bulk jobs' settings (tests: shorter leases). */
  jobs?: Partial<JobSettings>;
  /** Webhook deliveries' settings; tests give a resolver of their own, and shorter times. */
  webhooks?: Partial<DeliverySettings>;
  logLevel?: string;
  /** Where the log lines go instead of stdout (tests that read the log). */
  logStream?: DestinationStream;
  /** Slow-client limits; the defaults suit production, tests shorten them. */
  timeouts?: Partial<ClientTimeouts>;
  /** The clock rate limit windows are counted on (tests); by default the database's, or this process's. */
  rateLimitClock?: WindowClock | undefined;
}

/**
 * A client that sends its headers or body too slowly (slowloris) holds a socket: past headersMs for
 * the headers or requestMs for the whole request, Node answers 408 and closes the connection. Node
 * looks for such connections every checkEveryMs (its own default, 30 s, would let one live that much
 * longer).
 */
export interface ClientTimeouts {
  headersMs: number;
  requestMs: number;
  checkEveryMs: number;
}

const DEFAULT_TIMEOUTS: ClientTimeouts = { headersMs: 60_000, requestMs: 120_000, checkEveryMs: 5_000 };

/** TRUST_PROXY as Fastify takes it: a hop count trusts that many proxies nearest the service. */
function trustedProxies(
  setting: Config['trustProxy'],
): boolean | string | ((address: string, hop: number) => boolean) {
  return typeof setting === 'number' ? (_address, hop) => hop < setting : setting;
}

/** Where and how webhook deliveries go: the defaults, WEBHOOK_ALLOWED_NETWORKS, and a test's own. */
function webhookSettings(options: AppOptions): DeliverySettings {
  return {
    ...DEFAULT_DELIVERY_SETTINGS,
    rules: addressRules(options.config.webhookAllowedNetworks ?? []),
    resolve: (hostname) => lookup(hostname, { all: true, verbatim: true }),
    userAgent: `sfa-backoffice/${VERSION}`,
    ...Object.fromEntries(Object.entries(options.webhooks ?? {}).filter(([, value]) => value !== undefined)),
  };
}

/** The whole HTTP service as a Fastify instance; tests call inject() on it without listening. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const app = Fastify({
    logger: loggerOptions(options.logLevel ?? 'info', options.logStream),
    // X-Request-Id honoured when well formed, else a UUID; echoed by the onSend hook below.
    requestIdHeader: false,
    genReqId: requestId,
    logController: new RequestLogController(),
    // Slow clients must not hold sockets forever (slowloris).
    requestTimeout: timeouts.requestMs,
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: timeouts.checkEveryMs },
    connectionTimeout: 0,
    // installGracefulClose answers 503 while closing, in the spec's error shape.
    return503OnClosing: false,
    // Requests Node's parser refuses get the spec's error shape too.
    clientErrorHandler,
    // Behind a load balancer: the client's address (token throttle) and the public scheme and host
    // (paging links) come from X-Forwarded-* of the proxies trusted here.
    trustProxy: trustedProxies(options.config.trustProxy ?? false),
  });
  // First of every hook, before any plugin is registered: every route's requests are counted.
  app.decorate('requestsInFlight', requestsInFlight(app));
  app.decorateRequest('tenantId', 0);
  const feedWatch = new FeedStallWatch(
    options.db,
    app.log,
    options.config.feedStallWarnSeconds ?? DEFAULT_FEED_STALL_WARN_SECONDS,
  );
  app.decorate('feedWatch', feedWatch);
  const metrics = installMetrics(app, options.db, options.config, feedWatch);
  const webhooks = webhookSettings(options);
  const sealingKey = once(() => serverSecret(options.db, 'webhook_sealing'));
  const deliveries = webhookDeliveries(options.db, newInstanceId(), webhooks, sealingKey, metrics, app.log);
  metrics.watchWebhooks(() => webhookFigures(options.db));
  app.decorate('webhookDeliveries', deliveries);
  // One admission for every batch route and the jobs' writing: the bound is on the process's batch
  // work, of any resource, and a job's blocks take their turns with the batches.
  const admission = admissionFor(options.config, () => options.db.poolStats().max);
  metrics.watchAdmission(admission);
  const jobs = jobWork(
    options.db,
    newInstanceId(),
    {
      ...DEFAULT_JOB_SETTINGS,
      ...(options.config.jobLeaseSeconds === undefined
        ? {}
        : { leaseSeconds: options.config.jobLeaseSeconds }),
      ...options.jobs,
    },
    admission,
    (resource, rows) => metrics.jobRowsWritten(resource, rows),
    app.log,
  );
  metrics.watchJobs(() => jobFigures(options.db));
  app.decorate('jobs', jobs);
  // Work beside the requests, in every instance; `serve` starts it after listening (src/server.ts).
  const background = new BackgroundLoops(
    [
      // Each instance's own figures: no lease.
      {
        name: 'feed-stall-watch',
        everyMs: FEED_WATCH_EVERY_MS,
        round: async () => void (await feedWatch.check()),
      },
      // One instance for all, by lease.
      idempotencyExpirySweep(options.db, newInstanceId()),
      writtenCountsFold(options.db, newInstanceId()),
      // Every instance sends, each stream (an endpoint and a resource) from one at a time, by lease.
      deliveries,
      // Every instance runs jobs, each job in one instance at a time, by lease.
      jobs,
    ],
    app.log,
  );
  app.decorate('background', background);
  app.addHook('onClose', () => background.stop());
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  installErrorHandling(app);
  installGracefulClose(app);
  installSecurityHeaders(app);
  // Before compression's hooks: it reads the answer's text (a refused request's first problems).
  installActivityRecording(app, options.db);
  // Before any route: the plugin hooks each route as it is added
  // (docs/decisions/0112-compression-only-when-asked.md).
  await app.register(fastifyCompress, {
    // Answers only; a Content-Encoding request body is not inflated (the body limits count raw bytes).
    globalCompression: true,
    globalDecompression: false,
    // Below a few kB compression saves less than it costs (so /health and most errors stay plain).
    threshold: 4096,
    // Brotli at quality 1 is both faster and smaller than gzip 1 on a 1.5 MB page; deflate left out.
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } },
    zlibOptions: { level: 1 },
  });
  // A cache must not serve one client's encoding to another: the plain answers vary too (the plugin
  // marks only those it compresses).
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('vary')) reply.header('vary', 'accept-encoding');
    done(null, payload);
  });

  app.removeAllContentTypeParsers();
  // Bytes, not text: a string would already have turned bytes that are not UTF-8 into U+FFFD.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!isUtf8Charset(charsetOf(request.headers['content-type']))) {
      done(problems.unsupportedCharset(), undefined);
      return;
    }
    try {
      // A large batch body stays bytes, parsed in a worker thread (src/body-threads/batch-worker-pool.ts).
      done(null, parseJsonRequest(body as Buffer, request.routeOptions.config.rawJsonFrom));
    } catch {
      done(problems.invalidJson(), undefined);
    }
  });

  const { health, ready } = operationsRoutes;
  app.get(health.url, { schema: health.schema }, async () => ({ status: 'ok', version: VERSION }));
  app.get(ready.url, { schema: ready.schema }, async (_request, reply) => {
    try {
      // Reachable is not enough: a database that stopped taking writes (failover) is not ready either.
      await assertDatabaseWritable(options.db);
      return { status: 'ready' };
    } catch {
      return reply
        .code(503)
        .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
        .send({ status: 'unavailable' });
    }
  });

  // Guard of every /api and /v1 route: runs before the body is read, sets request.tenantId.
  const { authenticate, tokenRoutes } = createAuth({ ...options, metrics });
  await app.register(tokenRoutes);

  // Idempotency-Key answers (extensions.md 8): kept 7 days unless set otherwise.
  const idempotency = {
    ttlSeconds: options.config.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS,
  };
  for (const resource of batchResources) {
    registerBatchRoute(app, resource, { db: options.db, authenticate, metrics, admission, idempotency });
  }
  registerReadRoutes(app, { db: options.db, authenticate, publicBaseUrl: options.config.publicBaseUrl });
  registerDeliveryStateRoutes(app, { db: options.db, authenticate, idempotency });
  registerWebhookRoutes(app, {
    db: options.db,
    authenticate,
    idempotency,
    context: {
      rules: webhooks.rules,
      resolve: webhooks.resolve,
      sealingKey,
      generation: () => servedGeneration(options.db),
      timeoutMs: webhooks.timeoutMs,
      userAgent: webhooks.userAgent,
    },
    deliveriesDue: () => background.nudge(deliveries.name),
  });
  registerJobRoutes(app, {
    db: options.db,
    authenticate,
    idempotency,
    jobQueued: () => background.nudge('jobs'),
  });
  registerActivityRoutes(app, { db: options.db, authenticate, publicBaseUrl: options.config.publicBaseUrl });
  registerDocs(app);
  // The integrator's console (extensions.md 14), unless CONSOLE=off.
  if (options.config.console !== false) registerConsole(app);
  return app;
}
