import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { testAuthConfig } from '../helpers/app.js';

/** Opens a raw connection and resolves with what the server sent when it closed it. */
function slowClient(port: number, send: (socket: Socket) => void): Promise<{ answer: string }> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => send(socket));
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    // A server that closes while the client still writes may end with a reset (Node 24 does): the
    // answer read before it is what counts.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET') reject(error);
    });
    socket.on('close', () => resolve({ answer }));
  });
}

/**
 * Writes one byte every interval until the socket closes (a slowloris), and ends its side once all
 * is sent, so that a server that never cuts it off answers the end instead of keeping the test
 * waiting. Returns how many bytes are still unsent.
 */
function trickle(socket: Socket, text: string, everyMs: number): () => number {
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed) return clearInterval(timer);
    if (at >= text.length) {
      clearInterval(timer);
      return socket.end();
    }
    socket.write(text[at++]!);
  }, everyMs);
  socket.on('close', () => clearInterval(timer));
  return () => text.length - at;
}

/** The status line and the JSON body of a raw answer. */
function parsed(answer: string): { status: number; body: unknown; headers: string } {
  const [head, body] = answer.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]), body: JSON.parse(body), headers: head };
}

describe("slow clients are cut off (slowloris), and requests the HTTP parser refuses get the spec's errors", () => {
  let app: FastifyInstance;
  let db: Database;
  let port: number;
  before(async () => {
    db = await openPglite(undefined);
    await migrate(db);
    app = await buildApp({
      db,
      config: testAuthConfig,
      logLevel: 'silent',
      timeouts: { headersMs: 600, requestMs: 1_000, checkEveryMs: 100 },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  after(async () => {
    await app.close();
    await db.close();
  });

  test('headers sent a byte at a time: 408 and closed once the header timeout passes', async () => {
    let unsent = () => 0;
    const { answer } = await slowClient(port, (socket) => {
      socket.write('POST /api/stocks/batch-create HTTP/1.1\r\nHost: localhost\r\n');
      unsent = trickle(socket, `X-Padding: ${'a'.repeat(1000)}\r\n`, 50);
    });
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.deepEqual(parsed(answer).body, {
      statusCode: 408,
      errors: [{ message: 'The request was not received in time; the connection is closed' }],
    });
    assert.ok(unsent() > 0, 'cut off by the server while the client was still sending');
  });

  test('a body sent a byte at a time: 408 and closed once the request timeout passes', async () => {
    const body = 'grant_type=client_credentials&client_id=x&client_secret=y';
    let unsent = () => 0;
    const { answer } = await slowClient(port, (socket) => {
      socket.write(
        'POST /token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n' +
          `Content-Length: ${body.length}\r\n\r\n`,
      );
      unsent = trickle(socket, body, 200);
    });
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(unsent() > 0, 'cut off by the server while the client was still sending');
  });

  for (const [what, header] of [
    ['a NUL byte in Idempotency-Key', 'Idempotency-Key: abc\x00def'],
    ['a DEL byte in Idempotency-Key', 'Idempotency-Key: abc\x7fdef'],
    ['a header name with a space', 'Idempotency Key: abc'],
  ] as const) {
    test(`${what}: 400 in the spec's shape, JSON, then the connection is closed`, async () => {
      const { answer } = await slowClient(port, (socket) => {
        socket.write(`POST /api/stocks/batch-create HTTP/1.1\r\nHost: localhost\r\n${header}\r\n\r\n`);
      });
      const { status, body, headers } = parsed(answer);
      assert.equal(status, 400);
      assert.match(headers, /\r\ncontent-type: application\/json/i);
      const { statusCode, errors } = body as { statusCode: number; errors: { message: string }[] };
      assert.equal(statusCode, 400);
      assert.equal(errors.length, 1);
      assert.match(errors[0]!.message, /^Malformed HTTP request: [\x20-\x7e]+$/);
    });
  }

  test("a request line that is not HTTP: 400 in the spec's shape", async () => {
    const { answer } = await slowClient(port, (socket) => socket.write('HELLO\r\n\r\n'));
    assert.equal(parsed(answer).status, 400);
    assert.match((parsed(answer).body as { errors: { message: string }[] }).errors[0]!.message, /^Malformed/);
  });

  test("headers past the 16 KiB limit: 431 with a body in the spec's shape", async () => {
    const { answer } = await slowClient(port, (socket) => {
      socket.write(`GET /health HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    });
    assert.deepEqual(parsed(answer), {
      status: 431,
      headers: parsed(answer).headers,
      body: { statusCode: 431, errors: [{ message: 'Request headers exceed the limit of 16384 bytes' }] },
    });
  });

  test('a prompt client is not affected', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(response.status, 200);
  });
});
