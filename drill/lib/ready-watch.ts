/*
 * An instance's /ready asked every 250 ms: each change of its answer, and when it came.
 */

export interface ReadyChange {
  at: number;
  /** 0: no answer. */
  status: number;
}

export interface ReadyWatch {
  /** Stops asking; resolves to the changes, the first answer first. */
  stop(): Promise<ReadyChange[]>;
}

export function watchReady(baseUrl: string, everyMs = 250): ReadyWatch {
  const changes: ReadyChange[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      let status = 0;
      try {
        const response = await fetch(`${baseUrl}/ready`, { signal: AbortSignal.timeout(5_000) });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        // No answer: 0.
      }
      if (changes.at(-1)?.status !== status) changes.push({ at: Date.now(), status });
      await new Promise((done) => setTimeout(done, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return changes;
    },
  };
}
