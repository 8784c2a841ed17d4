#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --v8-pool-size=2 --max-semi-space-size=4
// The built command line (npm install runs the build through the prepare script); `npm start` runs
// this file as it is, so the line above holds for both. It keeps the embedded default's memory low:
// each thread that allocates (V8's background threads, libuv's pool, the batch worker) got a malloc
// arena of its own that kept about 10 MB it no longer used, and V8's young generation grew to 16 MB
// per semi-space and stayed there (docs/decisions/0110-command-first-line-node-options.md). Since
// the embedded engine also runs V8 optimized for size, the young generation's bound matters most on
// PostgreSQL: with 32 MB a 1 GiB bulk job grew the process by more and ran no faster. Current
// figures: docs/performance.md, "The embedded default's memory and start" and "Bulk jobs".
import '../dist/cli.js';
