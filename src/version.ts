import { readFileSync } from 'node:fs';

/**
 * The name and version of package.json, read once at load time from the package root (one level
 * above src/ and dist/, so the path holds from both); import them rather than read the file again.
 * The version is printed by `sfa-backoffice --version`, answered by GET /health and exported as a
 * metric; name and version head the OpenAPI document.
 */
export const PACKAGE: { readonly name: string; readonly version: string } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
);

export const VERSION: string = PACKAGE.version;
