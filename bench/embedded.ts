/**
 * The embedded default's memory, first start and restart (issues 20 and 39), on the process `npm
 * start` runs: `npm run bench:embedded`. `npm run bench` has the memory rows.
 */

import { tempDir } from './lib/databases.js';
import { embeddedMemoryLines, measureEmbeddedMemory } from './lib/embedded-memory.js';
import { measureNpmStartRestarts, NPM_START_BAR_MS } from './lib/npm-start.js';
import { benchMain, describeMachine } from './lib/options.js';
import { serverEnv } from './lib/server.js';
import { formatTable } from './lib/stats.js';

async function main(): Promise<void> {
  console.log(`embedded-default benchmark ${new Date().toISOString()}: ${await describeMachine(false)}`);
  const figures = await measureEmbeddedMemory();
  const restarts = await measureNpmStartRestarts({ ...serverEnv(), DATA_DIR: tempDir('sfa-bench-start-') });
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const lines = [
    ...embeddedMemoryLines(figures),
    [
      `npm start after a restart, nothing changed: to /ready (median of ${restarts.restarts}, ${seconds(restarts.minMs)}-${seconds(restarts.maxMs)})`,
      seconds(restarts.medianMs),
      seconds(NPM_START_BAR_MS),
      restarts.medianMs <= NPM_START_BAR_MS ? 'within' : 'OVER',
    ],
  ];
  console.log(`\n${formatTable(['workload', 'figure', 'bar', ''], lines, 1)}`);
}

await benchMain(main);
