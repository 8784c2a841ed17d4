export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** Nearest-rank percentile (p in 0..100) of the samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  if (p === 50) {
    const middle = sorted.length >> 1;
    return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  }
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1]!;
}

/** A plain-text table; columns from the third on are right-aligned unless leftColumns says more. */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  leftColumns = 2,
): string {
  const widths = header.map((title, at) => Math.max(title.length, ...rows.map((row) => row[at]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, at) => (at < leftColumns ? cell.padEnd(widths[at]!) : cell.padStart(widths[at]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export const ms = (value: number) => value.toFixed(1);
export const ratio = (value: number) => `${value.toFixed(2)}x`;
export const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/**
 * The ratio of medians (the issue's figure), with the spread of the rounds' own ratios: each round
 * runs both sides back to back, so a round's ratio shares its conditions; a wide spread says the
 * machine was busy.
 */
export function batchRatio(service: readonly number[], raw: readonly number[]): string {
  const rounds = service.map((s, at) => s / raw[at]!);
  return `${ratio(median(service) / median(raw))} (rounds: median ${ratio(median(rounds))}, ${ratio(
    Math.min(...rounds),
  )}-${ratio(Math.max(...rounds))})`;
}
