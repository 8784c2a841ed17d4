import { connect } from 'node:net';

/** PostgreSQL's CancelRequest code (protocol 3.0, "CancelRequest"). */
const CANCEL_REQUEST_CODE = 80877102;
/** A cancel that cannot be delivered in this time is given up: the caller ends the connection anyway. */
const DELIVERY_TIMEOUT_MS = 2_000;

export interface CancelTarget {
  /** Host name or address, or the directory of a Unix socket (starting with /). */
  host: string;
  port: number;
  /** The backend's key data from the connection's start (BackendKeyData). */
  processId: number;
  secretKey: number;
}

/**
 * Asks the server, on a connection of its own, to cancel whatever the target backend runs now. This is
 * the protocol's way to stop a statement from the client side; PgBouncer forwards it to the server
 * connection its client is linked to. Resolves when delivered or given up; never rejects.
 */
export function sendCancelRequest(target: CancelTarget): Promise<void> {
  return new Promise((resolve) => {
    const address = target.host.startsWith('/')
      ? { path: `${target.host}/.s.PGSQL.${target.port}` }
      : { host: target.host, port: target.port };
    const socket = connect(address, () => {
      const packet = Buffer.alloc(16);
      packet.writeInt32BE(16, 0);
      packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      packet.writeInt32BE(target.processId, 8);
      packet.writeInt32BE(target.secretKey, 12);
      // Written, not ended: the server closes the connection once it has acted on the request, and
      // PgBouncer drops a forwarded cancel whose client hung up before the server got it.
      socket.write(packet);
    });
    socket.setTimeout(DELIVERY_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
  });
}
