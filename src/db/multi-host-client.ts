import pg from 'pg';
import type { ConnectionTargets, HostTarget } from './connection-url.js';

/**
 * pg.Pool's `Client` for DATABASE_URL's multi-host form: each new connection of the pool tries the
 * hosts in order, as libpq does, and keeps the first that connects and, with target_session_attrs,
 * qualifies. See docs/decisions/0144-multi-host-database-url.md.
 */

/** The parts of pg.Client this class relies on beyond its typed interface. */
interface ClientInternals {
  connection: pg.Connection & { stream: { destroy(): void } };
  connectionTimeoutHandle?: NodeJS.Timeout;
}

/**
 * Connections kept to a host that takes no writes while no host of the list does (between the loss of
 * a primary and a standby's promotion), and since when: reads go on there, writes fail with 25006 and
 * are answered to come back. The pool ends them once they are older than their life
 * (src/db/postgres.ts), so reads return to a primary as soon as there is one again.
 */
const standIns = new WeakMap<object, number>();

/** When client was connected as a stand-in (Date.now()), or undefined for a connection that qualified. */
export function standInSince(client: object): number | undefined {
  return standIns.get(client);
}

/** EventEmitter's own fields: the listeners of the pool and of the service stay where they are. */
const EMITTER_FIELDS = new Set(['_events', '_eventsCount', '_maxListeners']);

/** Why a host was passed over, for the error that names every host when none is kept. */
function reason(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? `${String(message)} (${code})` : String(message);
}

export function multiHostClient(targets: ConnectionTargets): typeof pg.Client {
  const hostCount = targets.hosts.length;
  return class MultiHostClient extends pg.Client {
    readonly #config: pg.ClientConfig;

    constructor(config: pg.ClientConfig) {
      super({ ...config, connectionString: targets.hosts[0]!.connectionString });
      this.#config = config;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<pg.Client> | undefined {
      const walked = this.#walk().then(() => this);
      if (!callback) return walked;
      walked.then(
        () => callback(null as unknown as Error),
        (error: Error) => callback(error),
      );
      return undefined;
    }

    /**
     * Tries each host in order within the pool's connection timeout. A host that refuses, times out
     * or does not qualify is passed over. When none qualifies, the first that was up but takes no
     * writes stands in (decision 0147): reads answer, writes get the come-back answers of decision
     * 0143. No host up at all is a connection error (08001), answered the same way.
     */
    async #walk(): Promise<void> {
      const budget = this.#config.connectionTimeoutMillis ?? 0;
      const deadline = budget > 0 ? Date.now() + budget : Number.POSITIVE_INFINITY;
      // Without connect_timeout, a host that never answers (a machine that is gone) may take an equal
      // share of the pool's timeout, not all of it: the hosts after it are tried in time.
      const perHost = targets.connectTimeoutMs ?? (budget > 0 ? Math.ceil(budget / hostCount) : 0);
      const passedOver: string[] = [];
      const codes = new Set<string | undefined>();
      // The first host that was up but did not qualify: it stands in if none does.
      let standIn: HostTarget | undefined;
      for (const [at, host] of targets.hosts.entries()) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        // The last host (without connect_timeout) has what is left: no host after it needs the time.
        const share = at === hostCount - 1 && targets.connectTimeoutMs === undefined ? 0 : perHost;
        const timeout = Math.min(share > 0 ? share : Number.POSITIVE_INFINITY, left);
        this.#become(host, Number.isFinite(timeout) ? timeout : 0);
        const name = `${host.host}:${host.port}`;
        try {
          await super.connect();
        } catch (error) {
          passedOver.push(`${name} ${reason(error)}`);
          codes.add((error as { code?: string }).code);
          this.#abandon();
          continue;
        }
        let refusal: string | undefined;
        try {
          refusal = await this.#refusal();
          standIn ??= refusal === undefined ? undefined : host;
        } catch (error) {
          refusal = reason(error);
        }
        if (refusal === undefined) return;
        passedOver.push(`${name} ${refusal}`);
        codes.add(undefined);
        await this.end().catch(() => {});
        this.#abandon();
      }
      const left = deadline - Date.now();
      if (standIn && left > 0) {
        this.#become(standIn, Number.isFinite(left) ? left : 0);
        try {
          await super.connect();
          standIns.set(this, Date.now());
          return;
        } catch (error) {
          passedOver.push(`${standIn.host}:${standIn.port} ${reason(error)}`);
          codes.add((error as { code?: string }).code);
          this.#abandon();
        }
      }
      const wanted = targets.targetSessionAttrs === 'any' ? 'connected' : `was ${targets.targetSessionAttrs}`;
      const failure = new Error(
        `no host of DATABASE_URL ${wanted}: ${passedOver.join('; ') || 'connection timeout'}`,
      );
      // Every host refused the same way (a wrong password, too many connections): that code, as a
      // single host's would be, so that what the pool and the answers make of it holds (53300 shrinks
      // the pool; 28P01 is no "come back").
      const [only] = codes;
      throw Object.assign(failure, { code: codes.size === 1 && only !== undefined ? only : '08001' });
    }

    /**
     * Makes this client a new, unconnected one for host: the own fields of a client constructed for
     * it replace the state of the last attempt (pg.Client connects once), while the listeners
     * attached to this object stay.
     */
    #become(host: HostTarget, timeoutMs: number): void {
      const fresh = new pg.Client({
        ...this.#config,
        connectionString: host.connectionString,
        connectionTimeoutMillis: timeoutMs,
      });
      for (const key of Object.getOwnPropertyNames(fresh)) {
        if (EMITTER_FIELDS.has(key)) continue;
        Object.defineProperty(this, key, Object.getOwnPropertyDescriptor(fresh, key)!);
      }
    }

    /**
     * Detaches the last attempt's connection from this client: its late events (the socket's end, an
     * error) must not reach the next attempt's state, and an error with no listener would end the
     * process.
     */
    #abandon(): void {
      const internals = this as unknown as ClientInternals;
      clearTimeout(internals.connectionTimeoutHandle);
      const connection = internals.connection;
      connection.removeAllListeners();
      connection.on('error', () => {});
      connection.stream.destroy();
    }

    /** Why the connected server does not qualify for target_session_attrs, or undefined. */
    async #refusal(): Promise<string | undefined> {
      if (targets.targetSessionAttrs === 'any') return undefined;
      // libpq's checks: read-write wants a session whose transactions may write (a standby's may
      // not either), primary a server not in recovery. Asked with a query, which PgBouncer passes.
      const { rows } = await this.query<{ recovery: boolean; read_only: string }>(
        "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only",
      );
      const state = rows[0]!;
      if (state.recovery) return 'is a standby (in recovery)';
      if (targets.targetSessionAttrs === 'read-write' && state.read_only === 'on') return 'is read-only';
      return undefined;
    }
  };
}
