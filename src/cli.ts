import { Command } from 'commander';
import { ConfigError, loadConfig } from './config.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { startServer } from './server.js';

const program = new Command('sfa-backoffice')
  .description('Back-office API for sales-force and delivery-management platforms')
  .showHelpAfterError();

program
  .command('serve')
  .description('start the HTTP service (settings from the environment: DATABASE_URL, DATA_DIR, PORT, HOST)')
  .action(async () => {
    const server = await startServer(loadConfig());
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      server.app.log.info({ signal }, 'shutting down');
      await server.close();
      process.exit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
  });

program
  .command('migrate')
  .description('bring the database schema up to date')
  .action(async () => {
    const db = await openDatabase(loadConfig());
    try {
      const { applied } = await migrate(db);
      console.log(applied.length ? `applied ${applied.join(', ')}` : 'schema is up to date');
    } finally {
      await db.close();
    }
  });

program.parseAsync().catch((error: unknown) => {
  // One line, no stack: the reason is for a person at a terminal.
  const reason = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
  console.error(`sfa-backoffice: ${reason}`);
  process.exit(1);
});
