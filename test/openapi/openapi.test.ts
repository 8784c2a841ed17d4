import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { validateItems } from '../../src/batch/validate-items.js';
import { ACKNOWLEDGE_BODY_LIMIT } from '../../src/deliveries/acknowledge.js';
import { REJECT_BODY_LIMIT } from '../../src/deliveries/rejections.js';
import {
  type ChoiceField,
  type DecimalField,
  type Field,
  type IntegerField,
  ItemsField,
  type TextField,
} from '../../src/fields/field.js';
import { inputSchemaName } from '../../src/openapi/batch-paths.js';
import { buildOpenApiDocument, openApiJson } from '../../src/openapi/document.js';
import { batchResources } from '../../src/resources/index.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { statusAndBody } from '../helpers/answer.js';
import { appForNewTenant, testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { at, customer, delivery, item } from '../helpers/read-data.js';

const doc: any = buildOpenApiDocument();

// OpenAPI 3.1 schemas are JSON Schema 2020-12: the component schemas become one schema of $defs.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
formats.default(ajv);
ajv.addVocabulary(['x-precision', 'x-scale']);
const toDefs = (schema: unknown) =>
  JSON.parse(
    JSON.stringify(schema).replaceAll(
      '"#/components/schemas/',
      '"https://sfa-backoffice.invalid/openapi.json#/$defs/',
    ),
  );
ajv.addSchema({ $id: 'https://sfa-backoffice.invalid/openapi.json', $defs: toDefs(doc.components.schemas) });
const validators = new Map<string, ValidateFunction>();

function validatorOf(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let check = validators.get(key);
  if (!check) {
    check = ajv.compile(toDefs(schema));
    validators.set(key, check);
  }
  return check;
}

function assertMatches(schema: unknown, value: unknown, what: string) {
  const check = validatorOf(schema);
  assert.ok(
    check(value),
    `${what}: ${ajv.errorsText(check.errors)}\nvalue: ${JSON.stringify(value).slice(0, 600)}`,
  );
}

function resolveResponse(response: any): any {
  return response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
}

/** Checks a real answer against the schema the document gives for its path, method and status. */
function assertDocumented(method: string, path: string, response: { status: number; body: unknown }) {
  const documented = doc.paths[path]?.[method]?.responses?.[String(response.status)];
  assert.ok(documented, `${method.toUpperCase()} ${path} documents status ${response.status}`);
  const schema = resolveResponse(documented).content['application/json'].schema;
  assertMatches(schema, response.body, `${method.toUpperCase()} ${path} ${response.status}`);
}

/** Every media type object of the document, with where it is. */
function* mediaTypes(): Generator<[string, any]> {
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      for (const [type, media] of Object.entries<any>(operation.requestBody?.content ?? {})) {
        yield [`${method} ${path} request ${type}`, media];
      }
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        for (const [type, media] of Object.entries<any>(resolveResponse(response).content ?? {})) {
          yield [`${method} ${path} ${status} ${type}`, media];
        }
      }
    }
  }
}

/** Every schema object under node that carries examples (JSON Schema `examples`, an array). */
function* schemasWithExamples(node: unknown, where: string): Generator<[string, any]> {
  if (node === null || typeof node !== 'object') return;
  if (!Array.isArray(node) && Array.isArray((node as any).examples)) yield [where, node];
  for (const [key, value] of Object.entries(node)) yield* schemasWithExamples(value, `${where}/${key}`);
}

/** "METHOD /path" of every route of the app (printRoutes' tree, HEAD left out). */
function appRoutes(app: FastifyInstance): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([^)]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.push(`${method} ${stack.join('')}`);
    }
  }
  return routes;
}

/**
 * Values around the rules of a field, for comparing the service's check with the field's schema: by
 * the field's kind, written here by hand (never from the schema under test); a new kind fails to
 * compile until it has its samples.
 */
function samples(field: Field): unknown[] {
  const others = [null, true, {}, [], 5];
  const blank = ['', ' '];
  switch (field.kind) {
    case 'choice': {
      const { values } = field as ChoiceField;
      return [...values, `${values[0]!.toLowerCase()}x`, ...others];
    }
    case 'timeOfDay':
      return ['00:00', '23:59', '24:00', '8:00', '08:60', ...others];
    case 'text': {
      const { max } = field as TextField;
      return [
        'A',
        'x'.repeat(max),
        'x'.repeat(max + 1),
        '😀'.repeat(max),
        '😀'.repeat(max + 1),
        ...blank,
        ...others,
      ];
    }
    case 'dateTime':
      return [
        '2026-01-10T08:00:00',
        '2026-12-31T23:59:59',
        '2026-01-10 08:00:00',
        '2026-13-01T00:00:00',
        '2026-01-10T24:00:00',
        '2026-01-10T08:00:00Z',
        '2026-01-10',
        ...others,
      ];
    case 'integer': {
      const { min, max } = field as IntegerField;
      return [
        min,
        max,
        min - 1,
        max + 1,
        String(min),
        ` ${max} `,
        `${min}.0`,
        1.5,
        '1.5',
        'x',
        '1e3',
        ...others,
      ];
    }
    case 'decimal': {
      const decimal = field as DecimalField;
      const integerDigits = decimal.precision - decimal.scale;
      const scale = decimal.scale;
      const inRange = (n: number) =>
        (decimal.min === undefined || n >= decimal.min) && (decimal.max === undefined || n <= decimal.max);
      // JSON numbers: the schema bounds the integer digits only, so fractions stay within the scale.
      const numbers = [
        0,
        1,
        -1,
        7,
        100,
        10 ** integerDigits - 1,
        10 ** integerDigits,
        -(10 ** integerDigits),
      ];
      if (scale >= 1) numbers.push(0.5, -2.5);
      if (scale >= 2) numbers.push(1.25);
      // Numeric strings: the schema cannot bound the value, so valid-looking ones stay within range.
      const strings = [
        '1',
        '+1',
        '-1',
        ' 7 ',
        '1.',
        '.5',
        '0012.50',
        '9'.repeat(integerDigits),
        '9'.repeat(integerDigits + 1),
        `1.${'1'.repeat(scale)}`,
        `1.${'1'.repeat(scale + 1)}`,
        `1.${'1'.repeat(scale)}000`,
        '1,5',
        '1e3',
        'abc',
        '-',
        '.',
        '1.2.3',
      ].filter(
        (text) =>
          !Number.isFinite(Number(text)) || inRange(Number(text)) || !/^\s*[+-]?[\d.]+\s*$/.test(text),
      );
      return [...numbers, ...strings, ...blank, null, true, {}, []];
    }
    case 'items':
      return []; // its children's fields are compared one by one
  }
}

/** The schema is meant to accept what the service accepts, but for blank optional non-text values. */
function comparable(field: Field, value: unknown): boolean {
  const isBlank = typeof value === 'string' && value.trim() === '';
  const plainText = field.kind === 'text';
  return !(isBlank && !field.required && !plainText);
}

describe('the OpenAPI document', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.deepEqual([doc.info.title, doc.info.version], ['sfa-backoffice', packageJson.version]);
    const result = await validate(structuredClone(doc));
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
  });

  test('docs/openapi.json is the generated document (run `npm run openapi` after changing a field table)', () => {
    const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    assert.ok(committed === openApiJson(), 'docs/openapi.json is out of date: run `npm run openapi`');
  });

  test('its text speaks of the API, not of documents integrators never see', () => {
    const texts: string[] = [];
    const collect = (value: unknown) => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value && typeof value === 'object') {
        for (const [key, inner] of Object.entries(value)) {
          if (['title', 'summary', 'description'].includes(key) && typeof inner === 'string')
            texts.push(inner);
          else collect(inner);
        }
      }
    };
    collect(doc);
    assert.ok(texts.length > 100);
    for (const text of texts) {
      assert.doesNotMatch(text, /\.md\b|backoffice-api|extensions|\bsection\b|\bspec\b/i, text);
      // Section numbers such as (4.3 to 4.9); RFC sections (RFC 6749 5.1) name a public document.
      assert.doesNotMatch(text.replace(/RFC \d+ \d+(\.\d+)*/g, ''), /\(\d+\.\d+\b/, text);
      // A value left out of a sentence (a required parameter's empty default).
      assert.doesNotMatch(text, /\b(default|of|to)\s*$/, text);
    }
  });

  test('the webhook endpoints state the retry schedule and the 15 s timeout, and POST .../retry is there', () => {
    const retry = doc.paths['/v1/webhooks/{id}/retry']?.post;
    assert.equal(retry?.operationId, 'retryWebhook');
    assert.ok(retry.responses['202'] && retry.responses['404']);
    for (const text of [
      doc.tags.find((tag: { name: string }) => tag.name === 'Webhooks').description,
      doc.paths['/v1/webhooks'].post.description,
      retry.description,
    ]) {
      assert.match(text, /2xx within 15 s/);
      assert.match(text, /first repeat within 10 s/);
      assert.match(text, /jitter, up to 1 hour/);
      assert.match(text, /3 days of failed attempts/);
    }
  });

  test('every component schema compiles as strict JSON Schema 2020-12', () => {
    for (const name of Object.keys(doc.components.schemas)) {
      assert.doesNotThrow(() => validatorOf({ $ref: `#/components/schemas/${name}` }), name);
    }
  });

  test('every example matches its schema', () => {
    let count = 0;
    for (const [where, media] of mediaTypes()) {
      if (media.example !== undefined) {
        assertMatches(media.schema, media.example, where);
        count++;
      }
      for (const [name, example] of Object.entries<any>(media.examples ?? {})) {
        assertMatches(media.schema, example.value, `${where} example ${name}`);
        count++;
      }
    }
    for (const [where, schema] of schemasWithExamples(doc.components.schemas, '#/components/schemas')) {
      for (const example of schema.examples) assertMatches(schema, example, where);
      count++;
    }
    assert.ok(count > 400, `${count} examples checked`);
  });

  test('request examples of the batch endpoints pass the service validator', () => {
    for (const resource of batchResources) {
      const { examples } = doc.paths[resource.path].post.requestBody.content['application/json'];
      for (const [name, example] of Object.entries<any>(examples)) {
        const { errors } = validateItems(resource, example.value);
        assert.deepEqual(errors, [], `${resource.path} example ${name}`);
      }
    }
  });

  test('every batch endpoint is documented from its field table', () => {
    for (const resource of batchResources) {
      const operation = doc.paths[resource.path].post;
      assert.equal(operation['x-body-limit'], resource.bodyLimit);
      assert.match(operation.description, new RegExp(`at most ${resource.bodyLimit} bytes`));
      assert.deepEqual(operation.security, [{ subscriptionKey: [], clientCredentials: [] }]);
      const body = operation.requestBody.content['application/json'].schema;
      assert.deepEqual([body.minItems, body.maxItems], [1, 10_000]);
      const schema = doc.components.schemas[inputSchemaName(resource)];
      assert.equal(schema.additionalProperties, false);
      assert.deepEqual(Object.keys(schema.properties), resource.fieldNames);
      assert.deepEqual(
        schema.required,
        resource.fieldNames.filter((name) => resource.fields[name]!.required),
      );
      for (const status of ['201', '400', '401', '413', '415', '500']) {
        assert.ok(operation.responses[status], `${resource.path} documents ${status}`);
      }
    }
  });

  test('field schemas accept and refuse what the service accepts and refuses', () => {
    let compared = 0;
    const tables = batchResources.flatMap((resource) => {
      const list: [string, Readonly<Record<string, Field>>][] = [
        [inputSchemaName(resource), resource.fields],
      ];
      for (const field of resource.fieldList) {
        if (field instanceof ItemsField)
          list.push([inputSchemaName(resource).replace(/Input$/, 'ItemInput'), field.fields]);
      }
      return list;
    });
    for (const [schemaName, table] of tables) {
      for (const [name, field] of Object.entries(table)) {
        const schema = doc.components.schemas[schemaName].properties[name];
        for (const value of samples(field)) {
          if (!comparable(field, value)) continue;
          const errors: string[] = [];
          field.check(value, errors);
          const accepted = validatorOf(schema)(value);
          assert.equal(
            accepted,
            errors.length === 0,
            `${schemaName}.${name} = ${JSON.stringify(value)}: service ${errors.join(', ') || 'accepts'}`,
          );
          compared++;
        }
      }
    }
    assert.ok(compared > 1000, `${compared} values compared`);
  });

  test('the Customer, Delivery and DeliveryItem schemas list every field of their tables', () => {
    const { Customer, Delivery, DeliveryItem } = doc.components.schemas;
    const customers = batchResources.find((r) => r.name === 'customers')!;
    const deliveries = batchResources.find((r) => r.name === 'deliveries')!;
    assert.deepEqual(Customer.required, customers.fieldNames);
    assert.deepEqual(Delivery.required, deliveries.fieldNames);
    assert.deepEqual(DeliveryItem.required, Object.keys((deliveries.fields.items as ItemsField).fields));
    assert.deepEqual(Customer.properties.email.type, ['string', 'null']);
    assert.equal(Customer.properties.code.type, 'string');
    assert.equal(Customer.properties.created_at.type, 'string', 'defaulted on insert: never null');
    assert.equal(Delivery.properties.voucher.type, 'string', 'defaults to ""');
    assert.equal(Delivery.properties.items.type, 'array');
    assert.deepEqual(Customer.properties.quota['x-precision'], 18);
  });
});

for (const backend of backends()) {
  describe(`the OpenAPI document and the app on ${backend.name}`, () => {
    test('the routes under /api, /v1 and /token are the paths of the document', async () => {
      const app = await buildApp({ db: await backend.db(), config: testAuthConfig, logLevel: 'silent' });
      try {
        await app.ready();
        const routes = appRoutes(app);
        assert.ok(routes.includes('GET /openapi.json') && routes.includes('GET /docs'), routes.join('\n'));
        // Fastify's :id is OpenAPI's {id}.
        const served = routes
          .filter((route) => /^\w+ \/(api|v1|token)(\/|$)/.test(route))
          .map((route) => route.replace(/:(\w+)/g, '{$1}'))
          .sort();
        const documented = Object.entries<any>(doc.paths)
          .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
          .sort();
        assert.deepEqual(
          served,
          documented.filter((route) => /^\w+ \/(api|v1|token)(\/|$)/.test(route)),
        );
        for (const route of documented) {
          const [method, url] = route.split(' ') as [string, string];
          const served = url.replace(/\{(\w+)\}/g, ':$1');
          assert.ok(app.hasRoute({ method: method as 'GET', url: served }), `${route} is served`);
        }
      } finally {
        await app.close();
      }
    });

    test('GET /openapi.json and /docs need no credentials and serve the document and the page', async () => {
      const { app } = (await appForNewTenant(await backend.db())).transport;
      const json = await app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(json.statusCode, 200);
      assert.match(String(json.headers['content-type']), /^application\/json/);
      assert.equal(json.body, openApiJson());
      const page = await app.inject({ method: 'GET', url: '/docs' });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /swagger-ui-bundle\.js/);
      assert.doesNotMatch(page.body, /https?:\/\//, 'no asset from another origin');
      const bundle = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
      assert.equal(bundle.statusCode, 200);
      const uiDocument = await app.inject({ method: 'GET', url: '/docs/json' });
      assert.deepEqual(uiDocument.json(), doc);
    });

    test('batch answers match the document: 201, 400 per item and array rules, 401, 413, 415', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const created = await tenant.post('/api/products/batch-create', [
        { code: 'P1', description: 'one' },
        { code: 'P2', description: 'two', tax: '19.00' },
      ]);
      assert.equal(created.status, 201);
      assertDocumented('post', '/api/products/batch-create', created);

      const invalid = await tenant.post('/api/stocks/batch-create', [
        { product_code: 'NOPE', location: 'W1' },
        { location: 'x'.repeat(21), quantity: '1,5', colour: 'red' },
        'not an object',
      ]);
      assert.equal(invalid.status, 400);
      assert.equal(invalid.body.errors.length, 3);
      assertDocumented('post', '/api/stocks/batch-create', invalid);

      for (const body of ['{"a": 1}', '[]', '[1,', JSON.stringify(Array(10_001).fill({}))]) {
        const refused = await tenant.post('/api/routes/batch-create', body);
        assert.equal(refused.status, 400);
        assertDocumented('post', '/api/routes/batch-create', refused);
      }
      const deliveries = await tenant.post('/api/deliveries/batch-create', [
        delivery('D1', { items: [item(1), item(1, { product_quantity: 'x' })] }),
      ]);
      assert.equal(deliveries.status, 400);
      assertDocumented('post', '/api/deliveries/batch-create', deliveries);

      const anonymous = await tenant.transport.app.inject({
        method: 'POST',
        url: '/api/users/batch-create',
        payload: [],
      });
      assert.equal(anonymous.statusCode, 401);
      assertDocumented('post', '/api/users/batch-create', { status: 401, body: anonymous.json() });

      const form = await tenant.post('/api/users/batch-create', 'code=1', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      assert.equal(form.status, 415);
      assertDocumented('post', '/api/users/batch-create', form);
    });

    test('retry-safe and option answers match the document: dry run, outcomes, skip, replay, 400, 409, 422', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const STOCKS = '/api/stocks/batch-create';
      const documented = (response: { status: number; body: unknown }) =>
        assertDocumented('post', STOCKS, response);
      assert.equal(
        (await tenant.post('/api/products/batch-create', [{ code: 'P1', description: 'one' }])).status,
        201,
      );
      const body = [
        { product_code: 'P1', location: 'W1' },
        { product_code: 'NOPE', location: 'W1' },
        { product_code: 'P1', location: 'W1' },
      ];
      const dry = await tenant.post(`${STOCKS}?dry_run=true&outcomes=true`, body.slice(0, 1));
      assert.equal(dry.status, 200, JSON.stringify(dry.body));
      documented(dry);
      const key = { 'idempotency-key': randomUUID() };
      const skipped = await tenant.post(`${STOCKS}?outcomes=true&on_invalid=skip`, body, key);
      assert.equal(skipped.status, 201, JSON.stringify(skipped.body));
      assert.deepEqual(
        [skipped.body.rejected, skipped.body.items.length, skipped.body.errors.length],
        [1, 2, 1],
      );
      documented(skipped);
      const replay = await tenant.post(`${STOCKS}?outcomes=true&on_invalid=skip`, body, key);
      assert.deepEqual(statusAndBody(replay), statusAndBody(skipped));
      const reused = await tenant.post(STOCKS, body.slice(0, 1), key);
      assert.equal(reused.status, 422);
      documented(reused);
      const malformed = await tenant.post(STOCKS, body, { 'idempotency-key': 'two words' });
      assert.equal(malformed.status, 400);
      documented(malformed);
      if (backend.name === 'postgres') {
        // 409: the key's lock held by another instance's transaction (one connection on PGlite: none).
        const other = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
        await other.connect();
        try {
          const busyKey = randomUUID();
          await other.query('BEGIN');
          await other.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [
            tenant.tenant.tenantId,
            busyKey,
          ]);
          const busy = await tenant.post(STOCKS, body, { 'idempotency-key': busyKey });
          assert.equal(busy.status, 409);
          documented(busy);
        } finally {
          await other.end();
        }
      }
    });

    test('change feed answers match the document: a page and a refused cursor', async () => {
      const tenant = await appForNewTenant(await backend.db());
      assert.equal(
        (await tenant.post('/api/products/batch-create', [{ code: 'P1', description: 'one' }])).status,
        201,
      );
      for (const resource of ['products', 'customers', 'deliveries']) {
        const page = await tenant.get(`/v1/changes?resource=${resource}`);
        assert.equal(page.status, 200);
        assertDocumented('get', '/v1/changes', page);
      }
      const refused = await tenant.get('/v1/changes?resource=products&after=nope');
      assert.equal(refused.status, 400);
      assertDocumented('get', '/v1/changes', refused);
    });

    test('every documented body limit is the limit of the route', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const limits: [string, number][] = [
        ...batchResources.map((resource): [string, number] => [resource.path, resource.bodyLimit]),
        ['/v1/deliveries/acknowledge', ACKNOWLEDGE_BODY_LIMIT],
        ['/v1/deliveries/reject', REJECT_BODY_LIMIT],
        ['/v1/deliveries/requeue', ACKNOWLEDGE_BODY_LIMIT],
      ];
      for (const [path, limit] of limits) {
        assert.equal(doc.paths[path].post['x-body-limit'], limit);
        const over = await tenant.post(path, '[]', { 'content-length': String(limit + 1) });
        assert.equal(over.status, 413, path);
        assertDocumented('post', path, over);
        assert.match(over.body.errors[0].message, new RegExp(`limit of ${limit} bytes`));
        const within = await tenant.post(path, '[]', { 'content-length': String(limit) });
        assert.notEqual(within.status, 413, path);
      }
    });

    test('read answers match the document: customers page, pending deliveries page, 400 parameters', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const loaded = await tenant.post('/api/customers/batch-create', [
        customer('FULL', {
          email: 'a@b.co',
          latitude: '4.6097100',
          longitude: -74.0817,
          block_sales: 'N',
          visit_priority: 'high',
          time_window_start: '08:00',
          created_at: at(5),
          updated_at: at(6),
          georeferenced_source: 'LUPAP',
          creation_source: 3,
          approval_state: 2,
          discount: '12.5',
        }),
        customer('MIN', { created_at: at(4) }),
      ]);
      assertDocumented('post', '/api/customers/batch-create', loaded);
      const customers = await tenant.get('/v1/customers?limit=1&sort=created_at');
      assert.equal(customers.status, 200);
      assert.equal(customers.body.data.length, 1);
      assert.notEqual(customers.body.links.next, null);
      assertDocumented('get', '/v1/customers', customers);
      const both = await tenant.get('/v1/customers');
      assertDocumented('get', '/v1/customers', both);
      assert.deepEqual(
        Object.keys(both.body.data[0]),
        Object.keys(doc.components.schemas.Customer.properties),
      );

      const badQuery = await tenant.get('/v1/customers?limit=0&created_from=2026-02-30&limt=5');
      assert.equal(badQuery.status, 400);
      assertDocumented('get', '/v1/customers', badQuery);

      const deliveries = await tenant.post('/api/deliveries/batch-create', [
        delivery('D1', {
          reported_at: at(3),
          latitude: 4.5,
          items: [item(1), item(2, { discount1: '5.5' })],
        }),
        delivery('D2'),
      ]);
      assertDocumented('post', '/api/deliveries/batch-create', deliveries);
      const pending = await tenant.get('/v1/deliveries/pending');
      assert.equal(pending.status, 200);
      assert.equal(pending.body.data.length, 2);
      assertDocumented('get', '/v1/deliveries/pending', pending);
      assert.deepEqual(
        Object.keys(pending.body.data[0]),
        Object.keys(doc.components.schemas.Delivery.properties),
      );
      const badPending = await tenant.get(`/v1/deliveries/pending?sort=name&seller_id=${'x'.repeat(19)}`);
      assert.equal(badPending.status, 400);
      assertDocumented('get', '/v1/deliveries/pending', badPending);

      const acknowledged = await tenant.post('/v1/deliveries/acknowledge', ['D1', 'NOPE']);
      assert.equal(acknowledged.status, 200);
      assertDocumented('post', '/v1/deliveries/acknowledge', acknowledged);
      const notACode = await tenant.post('/v1/deliveries/acknowledge', ['D1', 5]);
      assert.equal(notACode.status, 400);
      assertDocumented('post', '/v1/deliveries/acknowledge', notACode);
      assert.equal(
        notACode.body.errors[0].errors[0].message,
        'Item must be a delivery code: a string of 1 to 30 characters',
      );
      const documented = (path: string) =>
        doc.paths[path].post.responses['400'].content['application/json'].examples.invalidElement.value;
      assert.deepEqual(documented('/v1/deliveries/acknowledge'), notACode.body);

      // Rejections (extensions.md 13): the answers, the rejected list's records, the documented 400.
      const rejected = await tenant.post('/v1/deliveries/reject', [
        { code: 'D2', reason: 'unknown customer' },
        { code: 'NOPE', reason: 'no such delivery' },
      ]);
      assert.equal(rejected.status, 200);
      assertDocumented('post', '/v1/deliveries/reject', rejected);
      const rejectedList = await tenant.get('/v1/deliveries/rejected');
      assert.equal(rejectedList.body.data.length, 1);
      assertDocumented('get', '/v1/deliveries/rejected', rejectedList);
      assert.deepEqual(
        Object.keys(rejectedList.body.data[0]),
        Object.keys(doc.components.schemas.RejectedDelivery.properties),
      );
      const noReason = await tenant.post('/v1/deliveries/reject', [{ code: 'DEL-0001', reason: '' }]);
      assertDocumented('post', '/v1/deliveries/reject', noReason);
      assert.deepEqual(documented('/v1/deliveries/reject'), noReason.body);
      const requeued = await tenant.post('/v1/deliveries/requeue', ['D2', 'NOPE']);
      assert.equal(requeued.status, 200);
      assertDocumented('post', '/v1/deliveries/requeue', requeued);
    });

    test('POST /token, /health and /ready answers match the document', async () => {
      const { app } = (await appForNewTenant(await backend.db())).transport;
      const wrongGrant = await app.inject({
        method: 'POST',
        url: '/token',
        payload: { grant_type: 'password' },
      });
      assert.equal(wrongGrant.statusCode, 400);
      assertDocumented('post', '/token', { status: 400, body: wrongGrant.json() });
      const refused = await app.inject({
        method: 'POST',
        url: '/token',
        headers: { authorization: `Basic ${Buffer.from('cl_0000000000000000:nope').toString('base64')}` },
        payload: { grant_type: 'client_credentials' },
      });
      assert.equal(refused.statusCode, 401);
      assertDocumented('post', '/token', { status: 401, body: refused.json() });
      for (const path of ['/health', '/ready']) {
        const response = await app.inject({ method: 'GET', url: path });
        assertDocumented('get', path, { status: response.statusCode, body: response.json() });
      }
    });

    test('a token from POST /token (JSON body) matches the document', async () => {
      const db = await backend.db();
      const { app } = (await appForNewTenant(db)).transport;
      const client = await createTenant(db, `openapi-${randomUUID()}`);
      const token = await app.inject({
        method: 'POST',
        url: '/token',
        payload: {
          grant_type: 'client_credentials',
          client_id: client.clientId,
          client_secret: client.clientSecret,
        },
      });
      assert.equal(token.statusCode, 200);
      assertDocumented('post', '/token', { status: 200, body: token.json() });
    });
  });
}
