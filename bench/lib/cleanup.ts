/**
 * Undo actions (stop the server, drop the database, remove a temp dir), run newest first, each once:
 * at the end of the run, on failure, and on SIGINT/SIGTERM.
 */
const actions: { label: string; run: () => Promise<void> | void }[] = [];
let interrupted = false;

export function onCleanup(label: string, run: () => Promise<void> | void): void {
  actions.push({ label, run });
  // Registered after a signal started the cleanup: undo it at once, before the process exits.
  if (interrupted) void cleanupAll();
}

async function drain(): Promise<void> {
  for (let action = actions.pop(); action; action = actions.pop()) {
    try {
      await action.run();
    } catch (error) {
      console.error(`cleanup "${action.label}" failed: ${(error as Error).message}`);
    }
  }
}

let draining: Promise<void> = Promise.resolve();

/**
 * Runs every registered undo action, newest first. Calls made while a cleanup runs (a signal, and the
 * failure it causes in the main flow) wait for it and then undo what is left, so a database is never
 * dropped while the server using it is still being stopped.
 */
export function cleanupAll(): Promise<void> {
  draining = draining.then(drain);
  return draining;
}

for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: cleaning up`);
    void cleanupAll().finally(() => process.exit(code));
  });
}

// Whatever escapes (an error event nobody handles): still stop servers and drop databases.
process.on('uncaughtException', (error) => {
  console.error(error);
  if (interrupted) return;
  interrupted = true;
  void cleanupAll().finally(() => process.exit(1));
});
