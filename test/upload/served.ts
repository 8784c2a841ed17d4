import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { CLI, cliLaunch, spawnServer, waitReady } from '../../kit/server-process.js';
import { type TenantClient, tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { type ChildOutput, outputOf } from '../helpers/child-output.js';
import { newDatabaseSettings, type ServedBackend } from '../helpers/served-settings.js';

/*
 * The upload command's tests (extensions.md 15) run the built command (`npm run build` first) as an
 * integrator runs it: `bin/sfa-backoffice.js serve` on a database of its own, and
 * `bin/sfa-backoffice.js upload ...` as a child process, with its credentials in a file, through a
 * loopback proxy that can refuse or cut a part's request.
 */

export interface Served {
  url: string;
  credentials: string;
  dir: string;
  tenant: TenantClient;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-upload-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The command's environment: its first line's, LOG_LEVEL silent, and `env`. */
function commandEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = { ...process.env, ...cliLaunch().env, LOG_LEVEL: 'silent', ...env };
  // The caller's own settings never leak in: the database is the one `env` names (a DATABASE_URL
  // exported in the shell would turn a PGlite run into a PostgreSQL one), the service the one given.
  for (const name of [
    'SFA_URL',
    'SFA_SUBSCRIPTION_KEY',
    'SFA_CLIENT_ID',
    'SFA_CLIENT_SECRET',
    'DATABASE_URL',
    'DATA_DIR',
  ]) {
    if (!(name in env)) delete clean[name];
  }
  return clean;
}

/** The command's process with the node options and environment of its first line. */
export function command(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [...cliLaunch().nodeOptions, CLI, ...args], {
    env: commandEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Whether util-linux's `script` is here to give the command a pseudo-terminal. */
export const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

const quoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The command run on a pseudo-terminal (`script -qfec`, util-linux: no native module needed), as a
 * user at a terminal runs it: its stdout is a TTY. What it wrote to the terminal comes back as stdout,
 * with the terminal's CR LF line ends; -e gives the command's exit status.
 */
export function onTerminal(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildOutput> {
  // 200 columns: the bar's line is cut at the terminal's width (80 when the pty tells none).
  const line = `stty cols 200 && exec ${[process.execPath, ...cliLaunch().nodeOptions, CLI, ...args].map(quoted).join(' ')}`;
  return outputOf(
    spawn('script', ['-qfec', line, '/dev/null'], {
      env: commandEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

export const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildOutput> =>
  outputOf(command(args, env));

/**
 * The command `serve` on a new database with one tenant made by `tenant create` (its JSON:
 * `credentialsJson`), signed in; `env` is added to the server's environment.
 */
export async function servedTenant(
  backend: ServedBackend,
  name: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ url: string; tenant: TenantClient; credentialsJson: string }> {
  const settings = await newDatabaseSettings(backend);
  // Before serve: the embedded database is one process's at a time.
  const made = await run(['tenant', 'create', '--name', name, '--json'], settings);
  if (made.code !== 0) throw new Error(`tenant create: ${made.stderr}`);
  let output = '';
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  delete base.DATABASE_URL;
  delete base.DATA_DIR;
  const server = await spawnServer({
    env: { ...base, ...env, ...settings },
    onOutput: (chunk) => {
      output = (output + chunk.toString()).slice(-4000);
    },
  });
  after(() => server.stop());
  await waitReady(server, 120_000, () => output);
  const tenant = await tenantClient(httpTransport(server.url), JSON.parse(made.stdout));
  return { url: server.url, tenant, credentialsJson: made.stdout };
}

/** A served process on a new database, with one tenant whose credentials file is `credentials`. */
export async function served(backend: ServedBackend): Promise<Served> {
  const dir = tempDir();
  const { url, tenant, credentialsJson } = await servedTenant(backend, 'uploader');
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, credentialsJson);
  return { url, credentials, dir, tenant };
}

/** Writes a file line by line from a generator. */
export async function writeFile(path: string, lines: Iterable<string>): Promise<void> {
  const out = createWriteStream(path);
  for (const line of lines) if (!out.write(line)) await once(out, 'drain');
  out.end();
  await once(out, 'close');
}

/**
 * A products CSV of `rows` rows with codes `${prefix}-n` (new keys for each file of a test file) and
 * the shortest valid row (the two required fields, a one-letter description): the million-row file
 * is 10.4 MiB. The rows
 * whose index `invalid` holds have no description. Yielded 10,000 rows at a time: one write each.
 */
export function* productRows(
  prefix: string,
  rows: number,
  invalid: (at: number) => boolean = () => false,
): Iterable<string> {
  yield 'code,description\n';
  let chunk = '';
  for (let at = 0; at < rows; at++) {
    chunk += `${prefix}-${at},${invalid(at) ? '' : 'P'}\n`;
    if (at % 10_000 === 9_999) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** What the proxy does with a request: pass it, answer 503, cut it after some bytes, or hold it. */
export type Fault =
  | { kind: 'pass' }
  | { kind: '503' }
  | { kind: 'cut'; afterBytes: number }
  | { kind: 'hold' };

export interface Proxy {
  url: string;
  /** Every part's PUT seen, as "n:fault" in arrival order. */
  readonly puts: string[];
  /** Chooses the fault of each part's PUT (n, and how many PUTs of that part came before). */
  fault: (part: number, seen: number) => Fault;
  /** Answers the requests it holds with 503 and passes every later one. */
  release(): void;
}

/** A loopback proxy in front of the service that can refuse, cut or hold a part's PUT. */
export async function proxy(target: string): Promise<Proxy> {
  const held: Array<() => void> = [];
  const seen = new Map<number, number>();
  const state: Proxy = {
    url: '',
    puts: [],
    fault: () => ({ kind: 'pass' }),
    release() {
      state.fault = () => ({ kind: 'pass' });
      for (const answer of held.splice(0)) answer();
    },
  };
  const server: Server = createServer((req, res) => {
    const part = /\/parts\/(\d+)$/.exec(req.url ?? '');
    const fault: Fault =
      req.method === 'PUT' && part
        ? state.fault(Number(part[1]), seen.get(Number(part[1])) ?? 0)
        : { kind: 'pass' };
    if (req.method === 'PUT' && part) {
      seen.set(Number(part[1]), (seen.get(Number(part[1])) ?? 0) + 1);
      state.puts.push(`${part[1]}:${fault.kind}`);
    }
    if (fault.kind === '503') {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end('{"statusCode":503,"errors":[{"message":"refused by the test proxy"}]}');
      return;
    }
    if (fault.kind === 'hold') {
      req.resume();
      held.push(() => res.writeHead(503, { 'retry-after': '0' }).end());
      return;
    }
    const upstream = request(
      new URL(req.url!, target),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    if (fault.kind === 'cut') {
      // Part of the body reaches the service, then both connections drop mid-part.
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes >= fault.afterBytes) {
          upstream.destroy();
          req.socket.destroy();
        }
      });
    }
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** The JSON events the command printed with --json. */
export function events(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
