import { readFileSync } from 'node:fs';

/**
 * Where the upload and jobs commands send their requests and as whom (extensions.md 15): `--url` or
 * SFA_URL, and the credentials from the file `--credentials` names (the JSON `tenant create --json`
 * prints) or from SFA_SUBSCRIPTION_KEY, SFA_CLIENT_ID and SFA_CLIENT_SECRET. A secret is never a
 * command-line argument: arguments are seen by every user of the machine (ps) and kept in shell
 * histories.
 */

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface Connection {
  url: string;
  subscriptionKey: string;
  clientId: string;
  clientSecret: string;
}

/** A usage or settings error found before any request: exit status 3. */
export class UsageError extends Error {}

export function connectionOf(
  options: { url?: string; credentials?: string },
  env: NodeJS.ProcessEnv = process.env,
): Connection {
  let file: Record<string, unknown> = {};
  if (options.credentials !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.credentials, 'utf8');
    } catch (error) {
      throw new UsageError(
        `cannot read the credentials file ${options.credentials}: ${(error as Error).message}`,
      );
    }
    try {
      file = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Not the parser's message: V8 quotes the text around the error, which holds the secret.
      throw new UsageError(`the credentials file ${options.credentials} is not valid JSON`);
    }
    if (typeof file !== 'object' || file === null) {
      throw new UsageError(`the credentials file ${options.credentials} is not a JSON object`);
    }
  }
  // The file, when named, is what the caller chose; the environment fills what it lacks.
  const pick = (field: string, name: string): string => {
    const value = typeof file[field] === 'string' ? (file[field] as string) : env[name];
    if (!value) {
      throw new UsageError(
        `no ${name}: set it in the environment or name a credentials file with --credentials ` +
          '(the JSON that `sfa-backoffice tenant create --json` prints)',
      );
    }
    return value;
  };
  const url = options.url ?? env.SFA_URL ?? DEFAULT_URL;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new UsageError(`--url / SFA_URL is not an http:// or https:// address: ${url}`);
  }
  return {
    url,
    subscriptionKey: pick('subscriptionKey', 'SFA_SUBSCRIPTION_KEY'),
    clientId: pick('clientId', 'SFA_CLIENT_ID'),
    clientSecret: pick('clientSecret', 'SFA_CLIENT_SECRET'),
  };
}
