import { readFileSync } from 'node:fs';

/**
 * The version of package.json: printed by `sfa-backoffice --version`, answered by GET /health and
 * exported as a metric. Read at load time from the package root (one level above src/ and dist/).
 */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
