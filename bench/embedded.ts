/**
 * The embedded default's memory and first start (issue 20), on the process `npm start` runs: `npm run
 * bench:embedded`. `npm run bench` has the same rows.
 */
import { embeddedMemoryLines, measureEmbeddedMemory } from './lib/embedded-memory.js';
import { benchMain, describeMachine } from './lib/options.js';
import { formatTable } from './lib/stats.js';

async function main(): Promise<void> {
  console.log(`embedded-default benchmark ${new Date().toISOString()}: ${await describeMachine(false)}`);
  const figures = await measureEmbeddedMemory();
  console.log(`\n${formatTable(['workload', 'figure', 'bar', ''], embeddedMemoryLines(figures), 1)}`);
}

await benchMain(main);
