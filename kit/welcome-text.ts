/**
 * What `sfa-backoffice serve` prints at its first start on an empty embedded database (src/cli.ts):
 * a value by its label ('base URL', 'subscription key', 'client id', 'client secret', ...), each on a
 * line of its own, indented two spaces.
 */
export function printedValue(stdout: string, label: string): string | undefined {
  return new RegExp(`^ {2}${label} +(\\S+)$`, 'm').exec(stdout)?.[1];
}

/** The demo tenant's credentials, as the first start printed them; throws when one is missing. */
export function printedDemoCredentials(stdout: string): {
  subscriptionKey: string;
  clientId: string;
  clientSecret: string;
} {
  const value = (label: string) => {
    const found = printedValue(stdout, label);
    if (!found) throw new Error(`the first start printed no ${label}:\n${stdout.slice(-4000)}`);
    return found;
  };
  return {
    subscriptionKey: value('subscription key'),
    clientId: value('client id'),
    clientSecret: value('client secret'),
  };
}
