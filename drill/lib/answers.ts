import { type Answer, httpTransport } from '../../kit/transport.js';

/*
 * Every request the drill's clients send goes through `call`, which keeps what came back: the checks
 * of the answers given while no primary takes writes read this log.
 */

export type Family = 'batch' | 'other';

export interface LoggedAnswer {
  /** Date.now() when the request was sent. */
  sentAt: number;
  /** Date.now() when the answer came (or the request failed). */
  at: number;
  family: Family;
  method: string;
  path: string;
  /** 0: no HTTP answer at all (refused, reset, timed out). */
  status: number;
  retryAfter: string | null;
  /** The answer's `message` (contract shape) or first error's message, or the network error. */
  message: string;
}

export const answers: LoggedAnswer[] = [];

function messageOf(body: unknown, text: string): string {
  if (body && typeof body === 'object') {
    const shaped = body as { message?: unknown; errors?: { message?: unknown }[]; error?: unknown };
    if (typeof shaped.message === 'string') return shaped.message;
    if (typeof shaped.errors?.[0]?.message === 'string') return shaped.errors[0].message;
    if (typeof shaped.error === 'string') return shaped.error;
  }
  return text.slice(0, 200);
}

/** One request to an instance over the kit's HTTP transport, kept in `answers`; status 0: no answer. */
export async function call(
  baseUrl: string,
  family: Family,
  method: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body?: unknown,
): Promise<Answer> {
  const sentAt = Date.now();
  const answer = await httpTransport(baseUrl).send({
    method,
    path,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    timeoutMs: 30_000,
  });
  const ok = answer.status >= 200 && answer.status < 300;
  answers.push({
    sentAt,
    at: Date.now(),
    family,
    method,
    path,
    status: answer.status,
    retryAfter: answer.headers['retry-after'] ?? null,
    message: ok ? '' : messageOf(answer.body, answer.text),
  });
  return answer;
}

export const CONTRACT_DATABASE_MESSAGE = 'Error connecting to database';

/**
 * Whether an answer is one the service may give: anything below 500; a batch endpoint's contract 500
 * naming the database with Retry-After; 503 with Retry-After elsewhere. What is wrong, else null.
 */
export function wrongAnswer(answer: LoggedAnswer): string | null {
  if (answer.status === 0) return `no answer (${answer.message})`;
  if (answer.status < 500) return null;
  if (answer.retryAfter === null) return `${answer.status} without Retry-After`;
  if (answer.family === 'batch') {
    if (answer.status !== 500)
      return `${answer.status} on a batch endpoint (the contract allows 201, 400, 500)`;
    if (!answer.message.startsWith(CONTRACT_DATABASE_MESSAGE)) return `500 "${answer.message}"`;
    return null;
  }
  return answer.status === 503 ? null : `${answer.status} "${answer.message}"`;
}
