/**
 * DATABASE_URL in libpq's multi-host form, which `pg` cannot read (its parser throws "Invalid URL"):
 * `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`, as pg_auto_failover and
 * managed services hand it out. No `pg` import here: the configuration checks the URL at startup
 * without loading the driver. See docs/decisions/0144-multi-host-database-url.md.
 */

/** What a connection must be to be kept; libpq's values the service can use (it writes). */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';
const TARGET_SESSION_ATTRS: readonly string[] = ['any', 'read-write', 'primary'];
/** libpq's other values: connections that cannot write, or a choice of host that is not in order. */
const READ_SIDE_ATTRS: readonly string[] = ['read-only', 'standby', 'prefer-standby'];

/** PostgreSQL's default port, as libpq uses for a host given without one. */
const DEFAULT_PORT = 5432;
/** libpq reads a connect_timeout below 2 seconds as 2. */
const MIN_CONNECT_TIMEOUT_S = 2;

export interface HostTarget {
  /** Host name, address (IPv6 without brackets), or a Unix socket's directory (starting with /). */
  readonly host: string;
  readonly port: number;
  /** A single-host URL `pg` reads: this host, with the rest of DATABASE_URL's settings. */
  readonly connectionString: string;
}

export interface ConnectionTargets {
  /** In the order they are tried. */
  readonly hosts: readonly HostTarget[];
  readonly targetSessionAttrs: TargetSessionAttrs;
  /** connect_timeout: how long one host may take to connect (libpq: each host on its own). */
  readonly connectTimeoutMs: number | undefined;
}

export class ConnectionUrlError extends Error {}

/** Parameters that choose hosts: read here, never passed on to `pg`. */
const HOST_PARAMETERS = ['host', 'port', 'target_session_attrs', 'load_balance_hosts'];

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConnectionUrlError(`DATABASE_URL has a malformed percent-encoding in ${what}`);
  }
}

/** One entry of the URL's host list: `name`, `name:port`, `[v6]`, `[v6]:port`, or `%2Fsocket-dir`. */
function netlocEntry(entry: string): { host: string; port: string } {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    const after = entry.slice(close + 1);
    if (close < 0 || (after !== '' && !after.startsWith(':'))) {
      // The text is not quoted back: a password with an unencoded "/" or "@" would end up here.
      throw new ConnectionUrlError('DATABASE_URL has a malformed IPv6 host (in brackets)');
    }
    return { host: entry.slice(1, close), port: after.slice(1) };
  }
  const parts = entry.split(':');
  if (parts.length > 2) {
    throw new ConnectionUrlError(
      'DATABASE_URL has a host with several ":": an IPv6 address goes in brackets',
    );
  }
  return { host: decode(parts[0]!, 'a host'), port: parts[1] ?? '' };
}

function portNumber(text: string): number {
  if (text === '') return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) {
    // Not quoted back, as above; a password's "/" left unencoded makes part of it read as a port.
    throw new ConnectionUrlError('DATABASE_URL has a port that is not a number from 1 to 65535');
  }
  return port;
}

function hostPart(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : encodeURIComponent(host)}:${port}`;
}

/**
 * The hosts of DATABASE_URL in the order libpq tries them, each with a single-host URL `pg` reads,
 * and what a connection must be. undefined when `pg` reads the URL as it always has: one host and no
 * target_session_attrs other than `any`. Throws ConnectionUrlError naming what it refuses.
 */
export function parseConnectionTargets(url: string): ConnectionTargets | undefined {
  const match = /^(postgres(?:ql)?):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/i.exec(url);
  if (!match) throw new ConnectionUrlError('DATABASE_URL must start with postgres:// or postgresql://');
  const [, scheme, authority, path, query] = match as unknown as [string, string, string, string, string?];
  const at = authority.lastIndexOf('@');
  const userinfo = authority.slice(0, at + 1);
  const netloc = authority.slice(at + 1);
  const params = new URLSearchParams(query ?? '');

  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!TARGET_SESSION_ATTRS.includes(attrs)) {
    const why = READ_SIDE_ATTRS.includes(attrs)
      ? 'it chooses servers that take no writes, and the service writes'
      : 'libpq knows no such value';
    throw new ConnectionUrlError(
      `DATABASE_URL's target_session_attrs=${attrs} is not supported (${why}): use any, read-write or primary`,
    );
  }
  const balance = params.get('load_balance_hosts');
  if (balance !== null && balance !== 'disable') {
    throw new ConnectionUrlError(
      `DATABASE_URL's load_balance_hosts=${balance} is not supported: hosts are tried in order (disable)`,
    );
  }

  // libpq keeps hosts and ports as two lists: the URL's host list gives both, and a host= or port=
  // parameter replaces its list. One port applies to every host.
  const entries = netloc === '' ? [] : netloc.split(',').map(netlocEntry);
  const hostParam = params.get('host');
  const portParam = params.get('port');
  const hosts = hostParam !== null ? hostParam.split(',') : entries.map((entry) => entry.host);
  const ports = portParam !== null ? portParam.split(',') : entries.map((entry) => entry.port);
  if (hosts.length <= 1 && attrs === 'any') return undefined;
  if (params.has('hostaddr')) {
    throw new ConnectionUrlError('DATABASE_URL with several hosts or target_session_attrs takes no hostaddr');
  }
  if (hosts.length === 0) hosts.push('localhost');
  if (hosts.some((host) => host === '')) {
    throw new ConnectionUrlError('DATABASE_URL has an empty host in its list of hosts');
  }
  if (ports.length > 1 && ports.length !== hosts.length) {
    throw new ConnectionUrlError(`DATABASE_URL gives ${ports.length} ports for ${hosts.length} hosts`);
  }

  let connectTimeoutMs: number | undefined;
  const timeout = params.get('connect_timeout');
  if (timeout !== null) {
    if (!/^-?\d+$/.test(timeout.trim())) {
      throw new ConnectionUrlError(`DATABASE_URL has an invalid connect_timeout "${timeout}"`);
    }
    const seconds = Number(timeout);
    // libpq: zero or less waits indefinitely.
    connectTimeoutMs = seconds > 0 ? Math.max(seconds, MIN_CONNECT_TIMEOUT_S) * 1000 : undefined;
  }

  for (const name of HOST_PARAMETERS) params.delete(name);
  const rest = params.size > 0 ? `?${params.toString()}` : '';
  return {
    hosts: hosts.map((host, n) => {
      const port = portNumber(ports.length === 1 ? ports[0]! : (ports[n] ?? ''));
      return { host, port, connectionString: `${scheme}://${userinfo}${hostPart(host, port)}${path}${rest}` };
    }),
    targetSessionAttrs: attrs as TargetSessionAttrs,
    connectTimeoutMs,
  };
}
