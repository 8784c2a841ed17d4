import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { NewTenant } from '../../src/tenants/tenants.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { EVERY_BATCH_ENDPOINT } from '../helpers/batch-items.js';
import { num, toJson } from '../helpers/batch-json.js';

/*
 * Hostile input, property-based (fast-check): random bodies, valid bodies mutated field by field and
 * byte by byte (invalid UTF-8 included), deep nesting, huge strings, prototype keys, NUL characters,
 * odd content types and random query strings. Whatever comes in, the answer is never a 5xx, the
 * process keeps serving, and every error body has the spec's shape. Runs are bounded (NUM_RUNS) so the
 * file stays well under a minute on both backends; FC_SEED replays a failure fast-check reports.
 */

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

/** Inputs tried, per backend, for the closing figures. */
let tried = 0;
const statuses = new Map<number, number>();

const short = (value: unknown): string => {
  const text = Buffer.isBuffer(value) ? `Buffer(${value.toString('hex')})` : JSON.stringify(value);
  return (text ?? String(value)).length > 600 ? `${text.slice(0, 600)}... (${text.length} chars)` : text;
};

/**
 * fc.assert with a report that stays readable: the failing input cut short (a counterexample may be a
 * 2 MB string), the seed and path to replay it, and the assertion that failed.
 */
async function property<T extends unknown[]>(
  numRuns: number,
  arbitraries: { [K in keyof T]: fc.Arbitrary<T[K]> },
  predicate: (...args: T) => Promise<void>,
): Promise<void> {
  const asyncProperty = fc.asyncProperty as unknown as (...args: unknown[]) => fc.IAsyncProperty<T>;
  const details = await fc.check(asyncProperty(...arbitraries, predicate), {
    numRuns,
    ...(SEED === undefined ? {} : { seed: SEED }),
  });
  if (!details.failed) return;
  const error = details.errorInstance as Error | undefined;
  assert.fail(
    `property failed after ${details.numRuns} runs (FC_SEED=${details.seed}, path ${details.counterexamplePath})\n` +
      `input: ${(details.counterexample ?? []).map(short).join(', ')}\n` +
      `error: ${(error?.message ?? String(error)).slice(0, 1500)}`,
  );
}

const OBJECT_PROTOTYPE = Object.getOwnPropertyNames(Object.prototype);
const ARRAY_PROTOTYPE = Object.getOwnPropertyNames(Array.prototype);

after(() => {
  const by = [...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`);
  console.log(`# hostile-input: ${tried} inputs tried (${by.join(', ')})`);
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const keysAre = (value: Record<string, unknown>, keys: string[]) =>
  Object.keys(value).sort().join() === [...keys].sort().join();

/** One element of an error body: the shapes of backoffice-api.md 7.1 and extensions.md 2 and 6. */
function elementProblem(element: unknown): string | undefined {
  if (!isObject(element)) return 'an element that is not an object';
  if (typeof element.message === 'string') {
    if (keysAre(element, ['message'])) return undefined; // 401, 404, 413, 415, invalid JSON
    if (keysAre(element, ['index', 'field', 'message']) && element.index === null && element.field === null)
      return undefined; // array rules
    if (keysAre(element, ['field', 'message']) && typeof element.field === 'string') return undefined; // read
    return `unexpected keys ${Object.keys(element)}`;
  }
  if (keysAre(element, ['index', 'errors'])) {
    if (!Number.isInteger(element.index) || (element.index as number) < 0) return 'index not a position';
    const inner = element.errors;
    if (!Array.isArray(inner) || inner.length === 0) return 'item errors empty';
    for (const e of inner) {
      if (!isObject(e) || !keysAre(e, ['field', 'message'])) return `item error ${JSON.stringify(e)}`;
      if (typeof e.message !== 'string' || e.message === '') return 'item error without a message';
      if (e.field !== null && typeof e.field !== 'string') return 'item error field not a string';
    }
    return undefined;
  }
  return `unexpected element ${JSON.stringify(element).slice(0, 200)}`;
}

interface Answer {
  status: number;
  text: string;
}

/** Never a 5xx; a status of the allowed set; an error body of the spec's shape; a success body as told. */
function check(answer: Answer, allowed: readonly number[], what: string): unknown {
  const shown = `${what}: ${answer.status} ${answer.text.slice(0, 300)}`;
  assert.ok(answer.status < 500, `no 5xx: ${shown}`);
  assert.ok(allowed.includes(answer.status), `status in ${allowed}: ${shown}`);
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    assert.fail(`a JSON body: ${shown}`);
  }
  if (answer.status >= 400) {
    assert.ok(isObject(body) && keysAre(body, ['statusCode', 'errors']), `error shape: ${shown}`);
    assert.equal(body.statusCode, answer.status, shown);
    assert.ok(Array.isArray(body.errors) && body.errors.length > 0, `errors not empty: ${shown}`);
    for (const element of body.errors as unknown[]) {
      const problem = elementProblem(element);
      assert.equal(problem, undefined, `${problem}: ${shown}`);
    }
  }
  return body;
}

async function send(
  app: FastifyInstance,
  options: {
    method: 'GET' | 'POST';
    url: string;
    headers: Record<string, string | undefined>;
    payload?: string | Buffer;
  },
): Promise<Answer> {
  tried++;
  const headers = Object.fromEntries(Object.entries(options.headers).filter(([, v]) => v !== undefined));
  const response = await app.inject({ ...options, headers: headers as Record<string, string> });
  statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
  return { status: response.statusCode, text: response.body };
}

/** Every batch endpoint with a valid item per n (from the declarations): the seven of the spec and the two of extensions.md 3. */
const ENDPOINTS = EVERY_BATCH_ENDPOINT;
const BATCH_OK = [201, 400, 413, 415];
const ACKNOWLEDGE = '/v1/deliveries/acknowledge';
const ACK_OK = [200, 400, 413, 415];

/** Keys that name nothing here, or the prototype machinery. */
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', ''];

const hugeString = fc
  .integer({ min: 10_000, max: 300_000 })
  .chain((n) => fc.constantFrom('x', 'é', '😀', '\u0000', '"').map((c) => c.repeat(n)));

/** Values no field expects, and some it does in forms it may not. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 30 }).map((s) => `${s}\u0000${s}`),
  fc.constantFrom('', ' ', '\t\n', 'NaN', 'Infinity', '-0', '1e309', '0x10', '1,5', '١٢٣', 'Y', 'N', 'y'),
  fc.constantFrom(
    num('1e999999'),
    num('-1e-999999'),
    num('123456789012345678901234567890.123456789'),
    num('-0.000000000000000000001'),
    num('0.00'),
    num('2147483648'),
    num('-2147483649'),
  ),
  fc.double(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map((b) => num(b.toString())),
  fc.constantFrom('2026-02-30T00:00:00', '2026-01-01 00:00:00', '9999-12-31T23:59:59', '0000-01-01T00:00:00'),
  fc.integer({ min: 1, max: 500 }).map((d) => JSON.parse(`${'['.repeat(d)}${']'.repeat(d)}`)),
);

/** An object without a prototype: "__proto__" becomes an own key, serialised like any other. */
function bare(entries: Iterable<[string, unknown]>): Record<string, unknown> {
  const object = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of entries) object[key] = value;
  return object;
}

/** A valid item changed in one to four ways: a field set to a hostile value, a field removed, a key added. */
function mutatedItem(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const names = Object.keys(valid);
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...names), value: hostileValue }),
    fc.record({ kind: fc.constant('drop' as const), key: fc.constantFrom(...names) }),
    fc.record({
      kind: fc.constant('add' as const),
      key: fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 20 })),
      value: hostileValue,
    }),
  );
  const huge = fc.record({
    kind: fc.constant('set' as const),
    key: fc.constantFrom(...names),
    value: hugeString,
  });
  return fc
    .oneof(
      { weight: 8, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }) },
      { weight: 1, arbitrary: fc.tuple(huge, mutation) },
      { weight: 1, arbitrary: hostileValue.map((value) => ({ replace: value })) },
    )
    .map((change) => {
      if (!Array.isArray(change)) return change.replace;
      const entries = new Map(Object.entries(valid));
      for (const m of change) {
        if (m.kind === 'drop') entries.delete(m.key);
        else entries.set(m.key, m.value);
      }
      return bare(entries);
    });
}

/** A batch of valid items with some of them mutated. */
function mutatedBatch(endpoint: (typeof ENDPOINTS)[number]): fc.Arbitrary<string> {
  return fc
    .array(
      fc
        .nat(50)
        .chain((n) => fc.oneof(fc.constant(endpoint.valid(n) as unknown), mutatedItem(endpoint.valid(n)))),
      { minLength: 1, maxLength: 8 },
    )
    .map((items) => toJson(items));
}

/** JSON text changed byte by byte: bytes replaced, inserted, removed (invalid UTF-8 among them), cut short. */
function mutatedBytes(text: fc.Arbitrary<string>): fc.Arbitrary<Buffer> {
  const edit = fc.record({
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    kind: fc.constantFrom('replace', 'insert', 'delete', 'cut'),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }),
  });
  return fc.tuple(text, fc.array(edit, { minLength: 1, maxLength: 5 })).map(([source, edits]) => {
    let bytes = Buffer.from(source);
    for (const e of edits) {
      const at = Math.floor(e.at * bytes.length);
      const extra = Buffer.from(e.bytes);
      if (e.kind === 'replace')
        bytes = Buffer.concat([bytes.subarray(0, at), extra, bytes.subarray(at + extra.length)]);
      else if (e.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), extra, bytes.subarray(at)]);
      else if (e.kind === 'delete')
        bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + extra.length)]);
      else bytes = bytes.subarray(0, at);
    }
    return bytes;
  });
}

/** Bodies that are hostile as a whole: random JSON, nesting deep enough to break a recursive parser. */
const wholeBody: fc.Arbitrary<string> = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.array(fc.json({ maxDepth: 3 }), { minLength: 1, maxLength: 5 }).map((items) => `[${items.join(',')}]`),
  fc
    .record({
      depth: fc.integer({ min: 1, max: 200_000 }),
      open: fc.constantFrom('[', '{"a":'),
      closed: fc.boolean(),
    })
    .map(({ depth, open, closed }) => {
      const close = open === '[' ? ']' : '}';
      return `[${open.repeat(depth)}1${closed ? close.repeat(depth) : ''}]`;
    }),
  fc.constantFrom(
    '',
    ' ',
    'null',
    'true',
    '0',
    '""',
    '{}',
    '[]',
    '[[]]',
    '[null]',
    '[{}]',
    '\u0000',
    '[1e999999]',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json;;;',
  'application/json, text/plain',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/vnd.api+json',
  '*/*',
  '',
  undefined,
];
/** Visible ASCII only: the HTTP client itself refuses other header bytes. */
const contentType = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 60,
    }),
  },
);

/** Query strings: known, unknown and prototype names, odd values, broken percent escapes, repeats. */
const READ_PARAMS = [
  'client_id',
  'seller_id',
  'created_from',
  'modified_from',
  'reported_from',
  'sort',
  'page',
  'limit',
];
const queryValue = fc.oneof(
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent),
  fc.integer({ min: -10, max: 2_000_000_000 }).map(String),
  fc.constantFrom(
    '',
    '1',
    '0',
    '-1',
    '1.5',
    '1e3',
    '0x10',
    '2026-02-29',
    '2024-02-29',
    '2026-1-1',
    'created_at',
    '-created_at',
    'reported_at',
    '-reported_at',
    '%',
    '%zz',
    '%ff',
    '%00',
    '%C0%AF',
    '%E2%82',
    '%2',
    '+',
    '%20',
    'ñ',
    '\u00e9',
  ),
  fc.integer({ min: 1_000, max: 100_000 }).map((n) => 'x'.repeat(n)),
);

const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(...READ_PARAMS, ...PROTO_KEYS, 'limt', 'page[]', 'a[b]', 'a.b'),
        fc.string({ maxLength: 10 }).map(encodeURIComponent),
      ),
      queryValue,
      fc.constantFrom('=', '', '==', '=%3D'),
    ),
    { maxLength: 6 },
  )
  .chain((pairs) =>
    fc
      .constantFrom('&', '&&', ';', '&amp;')
      .map((separator) => pairs.map(([k, v, eq]) => `${k}${eq}${v}`).join(separator)),
  );

for (const backend of backends()) {
  describe(`hostile input on ${backend.name}`, () => {
    let tenant: TenantClient<NewTenant, InjectTransport>;
    before(async () => {
      tenant = await ownedTenantApp(await backend.db());
      const seeded = await tenant.post('/api/products/batch-create', [
        { code: 'P1', description: 'one' },
        { code: 'P2', description: 'two' },
      ]);
      assert.equal(seeded.status, 201);
    });
    after(() => tenant?.transport.app.close());
    const post = (path: string, payload: string | Buffer, type: string | undefined = 'application/json') =>
      send(tenant.transport.app, {
        method: 'POST',
        url: path,
        headers: { ...tenant.headers, 'content-type': type },
        payload,
      });

    test('every batch endpoint: valid bodies mutated field by field', async () => {
      for (const endpoint of ENDPOINTS) {
        await property(150, [mutatedBatch(endpoint)], async (body) => {
          check(await post(endpoint.path, body), BATCH_OK, endpoint.name);
        });
      }
    });

    test('every batch endpoint and the acknowledgement: random and deeply nested bodies', async () => {
      for (const path of [...ENDPOINTS.map((e) => e.path), ACKNOWLEDGE]) {
        const allowed = path === ACKNOWLEDGE ? ACK_OK : BATCH_OK;
        await property(60, [wholeBody], async (body) => {
          check(await post(path, body), allowed, path);
        });
      }
    });

    test('every batch endpoint and the acknowledgement: bytes mutated, invalid UTF-8 included (Buffer bodies)', async () => {
      for (const endpoint of ENDPOINTS) {
        const source = fc.nat(50).map((n) => toJson([endpoint.valid(n), endpoint.valid(n + 1)]));
        await property(80, [mutatedBytes(source)], async (bytes) => {
          check(await post(endpoint.path, bytes), BATCH_OK, endpoint.name);
        });
      }
      const codes = fc
        .array(fc.string({ maxLength: 35 }), { minLength: 1, maxLength: 5 })
        .map((c) => JSON.stringify(c));
      await property(150, [mutatedBytes(codes)], async (bytes) => {
        check(await post(ACKNOWLEDGE, bytes), ACK_OK, 'acknowledge');
      });
    });

    test('every batch endpoint: a lone surrogate anywhere is the invalid-JSON 400, a pair is text', async () => {
      const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
      const endpoint = fc.constantFrom(...ENDPOINTS);
      await property(150, [endpoint, fc.nat(50), surrogate, fc.boolean()], async (e, n, lone, inKey) => {
        const valid = e.valid(n);
        const name = Object.keys(valid)[n % Object.keys(valid).length]!;
        const item = inKey ? { ...valid, [`k${lone}`]: 1 } : { ...valid, [name]: `${lone}` };
        const answer = await post(e.path, toJson([item]));
        check(answer, [400], e.name);
        assert.deepEqual(
          JSON.parse(answer.text).errors,
          [{ message: 'Invalid JSON in request body' }],
          e.name,
        );
      });
    });

    test('every batch endpoint: floods of unknown keys list at most 100 problems per item and a cut', async () => {
      const endpoint = fc.constantFrom(...ENDPOINTS);
      await property(
        30,
        [endpoint, fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 3 })],
        async (e, keys, items) => {
          const extra = Array.from({ length: keys }, (_, k) => `"zz${k}":0`).join(',');
          const body = `[${Array.from({ length: items }, (_, n) => `${toJson(e.valid(n)).slice(0, -1)},${extra}}`).join(',')}]`;
          const answer = await post(e.path, body);
          const parsed = check(answer, [400], e.name) as {
            errors: { index: number; errors: { field: unknown; message: string }[] }[];
          };
          assert.equal(parsed.errors.length, items, e.name);
          for (const element of parsed.errors) {
            assert.equal(element.errors.length, Math.min(keys, 101), e.name);
            assert.deepEqual(element.errors[0], { field: 'zz0', message: 'Unknown field' }, e.name);
            if (keys > 100) assert.equal(element.errors[100]!.field, null);
          }
          assert.ok(answer.text.length < 20_000, `${e.name}: answer of ${answer.text.length} bytes`);
        },
      );
    });

    test('the acknowledgement: arrays of random values and codes', async () => {
      const element = fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.string({ maxLength: 10 }).map((s) => `${s}\u0000`),
        hostileValue,
        hugeString,
      );
      await property(200, [fc.array(element, { minLength: 0, maxLength: 6 })], async (codes) => {
        const answer = await post(ACKNOWLEDGE, toJson(codes));
        const result = check(answer, ACK_OK, 'acknowledge') as Record<string, unknown>;
        if (answer.status === 200) {
          assert.equal(result.statusCode, 200);
          assert.ok(Array.isArray(result.notFound));
        }
      });
    });

    test('every batch endpoint: odd and random content types', async () => {
      const bodies = fc.oneof(fc.constant('[{"code":"X"}]'), wholeBody);
      const paths = fc.constantFrom(...ENDPOINTS.map((e) => e.path), ACKNOWLEDGE);
      await property(300, [paths, contentType, bodies], async (path, type, body) => {
        check(await post(path, body, type), path === ACKNOWLEDGE ? ACK_OK : BATCH_OK, `${path} ${type}`);
      });
    });

    test('both read endpoints: random query strings get 200 or a 400 naming the parameter', async () => {
      for (const path of ['/v1/customers', '/v1/deliveries/pending']) {
        await property(500, [queryString], async (query) => {
          const url = query === '' ? path : `${path}?${query}`;
          const answer = await send(tenant.transport.app, { method: 'GET', url, headers: tenant.headers });
          const body = check(answer, [200, 400], url.slice(0, 300)) as Record<string, unknown>;
          if (answer.status === 200) {
            assert.ok(Array.isArray(body.data) && isObject(body.meta) && isObject(body.links), url);
          } else {
            for (const e of body.errors as { field?: unknown }[]) assert.equal(typeof e.field, 'string', url);
          }
        });
      }
    });

    test('a NUL character in a read filter is a 400 naming the parameter', async () => {
      for (const url of [
        '/v1/customers?client_id=%00',
        '/v1/deliveries/pending?client_id=a%00b',
        '/v1/deliveries/pending?seller_id=%00',
      ]) {
        const answer = await send(tenant.transport.app, { method: 'GET', url, headers: tenant.headers });
        check(answer, [400], url);
      }
    });

    test('random credentials headers and paths: 401 or 404 in the spec shape, never more', async () => {
      const headerText = fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        maxLength: 300,
      });
      const authorization = fc.oneof(
        headerText,
        headerText.map((t) => `Bearer ${t}`),
        fc.constant(undefined),
      );
      const key = fc.oneof(headerText, fc.constant(undefined));
      const path = fc.oneof(
        fc.constantFrom(
          ...ENDPOINTS.map((e) => e.path),
          '/v1/customers',
          '/v1/deliveries/pending',
          ACKNOWLEDGE,
        ),
        fc
          .array(fc.string({ maxLength: 8 }).map(encodeURIComponent), { maxLength: 4 })
          .map((parts) => `/api/${parts.join('/')}`),
      );
      const method = fc.constantFrom('GET' as const, 'POST' as const);
      await property(300, [path, method, key, authorization], async (url, verb, k, auth) => {
        const answer = await send(tenant.transport.app, {
          method: verb,
          url,
          headers: { 'subscription-key': k, authorization: auth, 'content-type': 'application/json' },
          payload: verb === 'POST' ? '[{"code":"X"}]' : undefined,
        });
        check(answer, [401, 404], `${verb} ${url}`);
      });
    });

    test('after all of it the service still answers and nothing leaked into prototypes', async () => {
      const t = tenant;
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype), OBJECT_PROTOTYPE);
      assert.deepEqual(Object.getOwnPropertyNames(Array.prototype), ARRAY_PROTOTYPE);
      const ok = await t.post('/api/payment-methods/batch-create', [
        { code: 'AFTER', description: 'still here' },
      ]);
      assert.equal(ok.status, 201);
    });
  });
}
