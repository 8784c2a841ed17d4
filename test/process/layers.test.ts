import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';

/**
 * The layers of docs/architecture.md, bottom to top: a module imports only from its own layer or the
 * ones below it. A folder is one layer: every module that knows the web framework (routes, hooks,
 * replies) lives in the HTTP layer's folders, so a domain rule never learns of an HTTP status.
 */
const LAYERS = ['declarations', 'client', 'database', 'statements', 'domain', 'http', 'process'] as const;
type Layer = (typeof LAYERS)[number];

const FOLDERS: Record<string, Layer> = {
  fields: 'declarations',
  upload: 'client',
  resources: 'declarations',
  db: 'database',
  sql: 'statements',
  batch: 'domain',
  admission: 'domain',
  auth: 'domain',
  tenants: 'domain',
  read: 'domain',
  deliveries: 'domain',
  idempotency: 'domain',
  seed: 'domain',
  demo: 'domain',
  'body-threads': 'domain',
  background: 'domain',
  feed: 'domain',
  webhooks: 'domain',
  jobs: 'domain',
  http: 'http',
  openapi: 'http',
  routes: 'http',
};

/** Files at the top of src/: the package's name and version are read by all; the rest is the process. */
const TOP_FILES: Record<string, Layer> = { 'version.ts': 'declarations' };

function layerOf(file: string): Layer {
  const [folder, ...rest] = file.split('/');
  if (rest.length === 0) return TOP_FILES[folder!] ?? 'process';
  const layer = FOLDERS[folder!];
  assert.ok(layer, `src/${folder}/ has no layer in docs/architecture.md (and this test)`);
  return layer;
}

const SRC = join(import.meta.dirname, '..', '..', 'src');
const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));

/** Every relative import of every module (types too: a type is knowledge of the layer it comes from). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) =>
    relative(SRC, normalize(join(SRC, dirname(file), m[1]!))).replace(/\.js$/, '.ts'),
  );
}

test('no module imports from a layer above its own', () => {
  const upward: string[] = [];
  for (const file of files) {
    const own = LAYERS.indexOf(layerOf(file));
    for (const target of importsOf(file)) {
      if (LAYERS.indexOf(layerOf(target)) > own) {
        upward.push(`src/${file} (${layerOf(file)}) -> src/${target} (${layerOf(target)})`);
      }
    }
  }
  assert.deepEqual(upward, []);
});

test('only the HTTP layer and the process know the web framework', () => {
  const below = LAYERS.indexOf('http');
  const knowing = files.filter(
    (file) =>
      LAYERS.indexOf(layerOf(file)) < below &&
      /from\s*'(?:fastify|@fastify\/[^']+)'/.test(readFileSync(join(SRC, file), 'utf8')),
  );
  assert.deepEqual(knowing, []);
});

test('the rule sees the imports it judges (a module of every layer imports something)', () => {
  const importing = new Set(files.filter((f) => importsOf(f).length > 0).map(layerOf));
  assert.deepEqual([...importing].sort(), [...LAYERS].sort());
});
