import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FeedRecord } from './feed.js';

/*
 * A receiver on loopback that takes every delivery (200) and keeps it in arrival order, as a receiver
 * that deduplicates by `webhook-id` would see it.
 */

export interface Delivery {
  id: string;
  receivedAt: number;
  resource: string;
  data: FeedRecord[];
  body: string;
}

export interface WebhookReceiver {
  readonly url: string;
  /** Every delivery of type `changes`, repeats included, in arrival order. */
  readonly deliveries: Delivery[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const parsed = JSON.parse(body) as { type: string; resource: string; data: FeedRecord[] };
        if (parsed.type === 'changes') {
          deliveries.push({
            id: String(request.headers['webhook-id']),
            receivedAt: Date.now(),
            resource: parsed.resource,
            data: parsed.data,
            body,
          });
        }
        response.writeHead(200).end();
      } catch {
        response.writeHead(400).end();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    deliveries,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export interface ReceivedStream {
  /** Records of one resource from the first arrival of each webhook-id, in arrival order. */
  records: FeedRecord[];
  /** Arrivals whose webhook-id came before. */
  repeats: number;
  /** Repeats whose body differed from the first arrival with that id (should be none). */
  differingRepeats: number;
}

/** What a receiver that deduplicates by webhook-id keeps of one resource. */
export function receivedStream(deliveries: readonly Delivery[], resource: string): ReceivedStream {
  const seen = new Map<string, string>();
  const stream: ReceivedStream = { records: [], repeats: 0, differingRepeats: 0 };
  for (const delivery of deliveries) {
    if (delivery.resource !== resource) continue;
    const before = seen.get(delivery.id);
    if (before !== undefined) {
      stream.repeats++;
      if (before !== delivery.body) stream.differingRepeats++;
      continue;
    }
    seen.set(delivery.id, delivery.body);
    stream.records.push(...delivery.data);
  }
  return stream;
}
