/**
 * Writes docs/openapi.json, the committed copy of the document GET /openapi.json serves
 * (npm run openapi). test/openapi/openapi.test.ts fails when the copy is out of date.
 */
import { writeFileSync } from 'node:fs';
import { openApiJson } from '../src/openapi/document.js';

const target = new URL('../docs/openapi.json', import.meta.url);
writeFileSync(target, openApiJson());
console.log(`wrote ${target.pathname}`);
