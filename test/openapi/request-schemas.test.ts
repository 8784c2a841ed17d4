import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Type, { type TObject, type TSchema } from 'typebox';
import { checkBody } from '../../src/fields/body-check.js';
import type { RouteDeclaration } from '../../src/http/route-schema.js';
import { buildOpenApiDocument } from '../../src/openapi/document.js';
import { openApiPath, publicSchema } from '../../src/openapi/route-operations.js';
import { listResources } from '../../src/resources/lists.js';
import { operationsRoutes } from '../../src/routes/operations-schemas.js';
import { tokenRequestBody } from '../../src/routes/token/token-schema.js';
import { changesRoute } from '../../src/routes/v1/changes-schemas.js';
import { deliveryStateRoutes } from '../../src/routes/v1/delivery-state-schemas.js';
import { jobRoutes } from '../../src/routes/v1/job-schemas.js';
import { listRoute } from '../../src/routes/v1/list-schemas.js';
import { webhookRoutes } from '../../src/routes/v1/webhook-schemas.js';

const doc: any = buildOpenApiDocument();
const declared: RouteDeclaration[] = [
  ...Object.values(webhookRoutes),
  ...Object.values(deliveryStateRoutes),
  ...Object.values(jobRoutes),
  ...listResources.map(listRoute),
  changesRoute,
  ...Object.values(operationsRoutes),
];

describe('request schemas declared once on the routes', () => {
  test('every declared body, query and path parameter is what the document shows', () => {
    for (const { method, url, bodyLimit, schema } of declared) {
      const operation = doc.paths[openApiPath(url)]?.[method.toLowerCase()];
      assert.ok(operation, `${method} ${url} is documented`);
      assert.equal(operation.operationId, schema.operationId);
      const media = schema.consumes?.[0] ?? 'application/json';
      const body = operation.requestBody?.content[media].schema;
      assert.deepEqual(body, schema.body && publicSchema(schema.body), `${schema.operationId} body`);
      const named = (where: string) =>
        (operation.parameters ?? []).filter((p: any) => p.in === where).map((p: any) => p.name);
      assert.deepEqual(named('path'), Object.keys(schema.params?.properties ?? {}));
      assert.deepEqual(named('query'), Object.keys(schema.querystring?.properties ?? {}));
      assert.equal(operation['x-body-limit'], bodyLimit, `${schema.operationId} x-body-limit`);
    }
  });

  test('every property of a declared body names the message its refusal gives', () => {
    for (const { schema } of declared) {
      const body = schema.body as TObject | undefined;
      for (const [name, property] of Object.entries<TSchema>(body?.properties ?? {})) {
        if (schema.operationId === 'replayWebhook') continue; // checked against the endpoint itself
        assert.equal(typeof (property as any).errorMessage, 'string', `${schema.operationId} ${name}`);
      }
    }
  });

  test("POST /token's body is the document's TokenRequest, in form and JSON", () => {
    assert.deepEqual(doc.components.schemas.TokenRequest, publicSchema(tokenRequestBody));
    const content = doc.paths['/token'].post.requestBody.content;
    assert.deepEqual(Object.keys(content), ['application/x-www-form-urlencoded', 'application/json']);
    for (const type of Object.keys(content)) {
      assert.deepEqual(content[type].schema, { $ref: '#/components/schemas/TokenRequest' });
    }
  });

  test('the document carries no message keyword of the checks', () => {
    assert.ok(!JSON.stringify(doc).includes('"errorMessage"'));
  });
});

describe('checkBody', () => {
  const body = Type.Object(
    {
      name: Type.String({ maxLength: 3, errorMessage: 'Bad name' }),
      size: Type.Optional(Type.Integer({ minimum: 1, default: 7, errorMessage: 'Bad size' })),
      code: Type.Optional(
        Type.Refine(Type.String({ errorMessage: 'Bad code' }), (value) => value.startsWith('c')),
      ),
    },
    { additionalProperties: false, minProperties: 1, errorMessage: { minProperties: 'Give one' } },
  );

  test('a body that is not an object is refused as a whole', () => {
    for (const value of [null, [], 'x', 1]) {
      assert.deepEqual(checkBody(body, value), {
        ok: false,
        errors: [{ field: null, message: 'Request body must be a JSON object' }],
      });
    }
  });

  test('unknown fields come first, then each declared property in order', () => {
    assert.deepEqual(checkBody(body, { size: 0, extra: 1, code: 'x' }), {
      ok: false,
      errors: [
        { field: 'extra', message: 'Unknown field' },
        { field: 'name', message: 'Field is required' },
        { field: 'size', message: 'Bad size' },
        { field: 'code', message: 'Bad code' },
      ],
    });
  });

  test('a refinement is part of the check; defaults fill what is absent', () => {
    assert.deepEqual(checkBody(body, { name: 'abc', code: 'cc' }), {
      ok: true,
      value: { name: 'abc', size: 7, code: 'cc' },
    });
  });

  test('unknown fields may come last; without additionalProperties: false they are left out', () => {
    assert.deepEqual(checkBody(body, { extra: 1, size: 0 }, { unknownLast: true }), {
      ok: false,
      errors: [
        { field: 'name', message: 'Field is required' },
        { field: 'size', message: 'Bad size' },
        { field: 'extra', message: 'Unknown field' },
      ],
    });
    const open = Type.Object({ name: Type.String({ errorMessage: 'Bad name' }) });
    assert.deepEqual(checkBody(open, { name: 'a', extra: 1 }), { ok: true, value: { name: 'a' } });
  });

  test("a rule across fields takes the place of a given field's own check", () => {
    const across = (given: Readonly<Record<string, unknown>>) => ({
      code: given.name === 'ab' ? 'No code with ab' : undefined,
    });
    assert.deepEqual(checkBody(body, { name: 'ab', code: 'cc' }, { across }), {
      ok: false,
      errors: [{ field: 'code', message: 'No code with ab' }],
    });
    assert.deepEqual(checkBody(body, { name: 'ab' }, { across }), {
      ok: true,
      value: { name: 'ab', size: 7 },
    });
    assert.deepEqual(checkBody(body, { name: 'x', code: 'x' }, { across }), {
      ok: false,
      errors: [{ field: 'code', message: 'Bad code' }],
    });
  });

  test('minProperties answers its own message once nothing else is wrong', () => {
    const loose = Type.Object(
      { name: Type.Optional(Type.String({ errorMessage: 'Bad name' })) },
      { minProperties: 1, errorMessage: { minProperties: 'Give one' } },
    );
    assert.deepEqual(checkBody(loose, {}), { ok: false, errors: [{ field: null, message: 'Give one' }] });
  });
});

describe('a webhook URL is what the URL parser takes', () => {
  test('an IDN host, a pipe in the path and brackets in the query are accepted, on create and change', async () => {
    const { checkCreate, checkPatch } = await import('../../src/webhooks/endpoint-input.js');
    for (const url of [
      'https://bücher.example/hook',
      'https://example.com/a|b',
      'https://example.com/h?x=[1]',
      'https://example.com/{id}^',
    ]) {
      const created = checkCreate({ url, resources: ['customers'] });
      assert.ok(created.ok, `${url}: ${JSON.stringify(created)}`);
      assert.equal(created.value.url.href, new URL(url).href);
      assert.ok(checkPatch({ url }).ok, url);
    }
    for (const url of [
      'https://user@example.com/',
      'https://example.com/#f',
      'ftp://example.com/',
      'not a url',
    ]) {
      const refused = checkCreate({ url, resources: ['customers'] });
      assert.ok(!refused.ok, url);
      assert.equal(refused.errors[0]!.field, 'url', url);
    }
  });

  test('the document still says format uri, the check never reads it', () => {
    const shown = publicSchema(webhookRoutes.create.schema.body) as {
      properties: { url: Record<string, unknown> };
    };
    assert.equal(shown.properties.url.format, 'uri');
    assert.equal('documentOnly' in shown.properties.url, false);
  });
});
