import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Work a running server does on its own, beside answering requests, in every instance
 * (docs/architecture.md, "Background work"). A loop (src/background/background-loops.ts) runs a round
 * every everyMs; tests call a round directly, so none of them waits for a timer.
 */
export interface BackgroundWork {
  /** Names the work in logs and in the loops' runRound. */
  readonly name: string;
  readonly everyMs: number;
  /** One round. Short transactions only: a long one would hold back every tenant's change feed. */
  round(): Promise<void>;
  /** When the server closes, after the last round: give up what the work holds (a lease). */
  close?(): Promise<void>;
}

/**
 * This instance's name as a holder of leases (src/background/leased-work.ts): host, process and a
 * random part, so two apps in one process (tests) are two instances, and a restarted process is a new
 * one that waits for its old lease to expire rather than taking it over as its own.
 */
export function newInstanceId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}
