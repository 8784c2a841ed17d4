import { makeTemplate } from './pglite-template.js';

/**
 * Makes the PGlite template (src/db/pglite-template.ts): run in a worker thread when a server finds
 * none, and as a script by `npm run build`. Its own thread or process, so that initdb's memory goes
 * back to the system when it ends.
 */
await makeTemplate();
