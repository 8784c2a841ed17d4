/**
 * Preloaded into the benchmark's server (`node --import <this file>`): watches the server's event
 * loop with perf_hooks.monitorEventLoopDelay and serves the figures since the last call, as JSON, on
 * BENCH_LOOP_PROBE_PORT (loopback), resetting them at each call. Plain JavaScript: the server runs
 * the production build with plain node. Benchmark use only; never part of the service.
 */
import { createServer } from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

/** Sampling interval, ms: fine enough to see a 10-ms stall, cheap enough not to add one. */
const RESOLUTION_MS = 2;
const port = Number(process.env.BENCH_LOOP_PROBE_PORT);

// Worker threads (the batch worker pool) inherit --import: only the main thread's loop is watched.
if (port > 0 && isMainThread) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  // Node records the whole interval between two samples (an idle loop reads the resolution): the
  // delay is what exceeds it.
  const delay = (ns) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
  let since = performance.eventLoopUtilization();
  const server = createServer((_request, response) => {
    const figures = {
      p50: delay(histogram.percentile(50)),
      p99: delay(histogram.percentile(99)),
      max: delay(histogram.max),
      samples: histogram.count,
      // Share of the wall time the loop spent running code rather than waiting for events.
      utilization: performance.eventLoopUtilization(since).utilization,
    };
    histogram.reset();
    since = performance.eventLoopUtilization();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(figures));
  });
  server.listen(port, '127.0.0.1');
  // Never keeps the server alive on its own.
  server.unref();
}
