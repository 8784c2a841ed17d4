import { type Command, InvalidArgumentError, Option } from 'commander';

/**
 * The upload and jobs commands (extensions.md 15) on the program of src/cli.ts. Their modules are
 * imported when one of them runs, so the other commands do not load them, nor they the server's.
 * Their usage errors end with status 3, as the spec's exit statuses say.
 */

const RESOURCES = [
  'stocks',
  'payment-methods',
  'factors',
  'routes',
  'users',
  'prices',
  'products',
  'customers',
  'deliveries',
];

function whole(text: string): number {
  if (!/^\d{1,4}$/.test(text)) throw new InvalidArgumentError('not a whole number');
  return Number(text);
}

/** `tab` stands for the tab character, which is awkward to type as an argument. */
function delimiter(text: string): string {
  const value = text === 'tab' || text === '\\t' ? '\t' : text;
  if (![',', ';', '\t', '|'].includes(value)) throw new InvalidArgumentError('one of , ; tab |');
  return value;
}

/** A usage error of commander (unknown option, missing argument): status 3; help and version: 0. */
const usageExit = (error: { exitCode: number }) => process.exit(error.exitCode === 0 ? 0 : 3);

function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'the service (default SFA_URL, else http://127.0.0.1:3000)')
    .option(
      '--credentials <file>',
      'a JSON file {subscriptionKey, clientId, clientSecret} (what `tenant create --json` prints); ' +
        'else SFA_SUBSCRIPTION_KEY, SFA_CLIENT_ID, SFA_CLIENT_SECRET',
    )
    .option(
      '--retries <n>',
      'attempts after the first of a request that failed on the network, 5xx or 429',
      whole,
      8,
    )
    .option('--json', 'print JSON');
}

/** Runs a command's work: its exit status, or its error as one line on stderr with the status it carries. */
async function exitWith(json: boolean | undefined, work: () => Promise<unknown>): Promise<void> {
  const [{ CommandExit, EXIT }, { UsageError }] = await Promise.all([
    import('./upload.js'),
    import('./settings.js'),
  ]);
  try {
    const status = await work();
    process.exitCode = typeof status === 'number' ? status : 0;
  } catch (error) {
    // A usage error found before any request (no --resource, an unreadable file): status 3.
    const status =
      error instanceof CommandExit ? error.status : error instanceof UsageError ? EXIT.usage : EXIT.failed;
    const message = (error as Error).message.replace(/\s*\n\s*/g, ' ');
    if (json) process.stdout.write(`${JSON.stringify({ event: 'error', message, exit: status })}\n`);
    process.stderr.write(`sfa-backoffice: ${message}\n`);
    process.exitCode = status;
  }
}

export function registerUploadCommands(program: Command): void {
  withConnection(
    program
      .command('upload')
      .description(
        'load a file (CSV or NDJSON) into a bulk job: send it in parts, complete it, follow it to its end',
      )
      .argument('<file>', 'the file')
      .exitOverride(usageExit)
      .addOption(new Option('--resource <resource>', 'the batch resource').choices(RESOURCES))
      .addOption(new Option('--format <format>', 'default from the extension').choices(['csv', 'ndjson']))
      .addOption(
        new Option('--on-invalid <mode>', 'reject: one invalid row fails the job; skip: write the valid rows')
          .choices(['reject', 'skip'])
          .default('reject'),
      )
      .option('--delimiter <char>', "a CSV's delimiter: , ; tab |", delimiter)
      .option('--results <dir>', 'where FILE.failed.ndjson is written (default: beside the file)')
      .option('--no-wait', 'print the job id once completed, without following it')
      .option('--job <id>', 'resume this open job: send the parts it lacks'),
  ).action(async (file: string, options) => {
    await exitWith(options.json, async () => {
      const { upload } = await import('./upload.js');
      return upload(file, options);
    });
  });

  const jobs = program
    .command('jobs')
    .description("list, show, abort a tenant's bulk jobs and read their results")
    .exitOverride(usageExit);
  withConnection(jobs.command('list').description('the newest jobs first'))
    .option('--limit <n>', '1 to 100', whole, 20)
    .action(async (options) => {
      await exitWith(options.json, async () => (await import('./jobs-command.js')).listJobs(options));
    });
  withConnection(jobs.command('show').description('one job: state, counts, error').argument('<id>')).action(
    async (id: string, options) => {
      await exitWith(options.json, async () => (await import('./jobs-command.js')).showJob(id, options));
    },
  );
  withConnection(
    jobs
      .command('results')
      .description("a job's results as NDJSON, one line per row of the outcome")
      .argument('<id>')
      .addOption(
        new Option('--outcome <outcome>')
          .choices(['failed', 'created', 'updated', 'ignored'])
          .default('failed'),
      ),
  ).action(async (id: string, options) => {
    await exitWith(options.json, async () => (await import('./jobs-command.js')).jobResults(id, options));
  });
  withConnection(
    jobs.command('abort').description('abort a job that has not begun writing').argument('<id>'),
  ).action(async (id: string, options) => {
    await exitWith(options.json, async () => (await import('./jobs-command.js')).abortJob(id, options));
  });
}
