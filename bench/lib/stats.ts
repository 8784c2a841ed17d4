export function median(samples: readonly number[]): number {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A plain-text table, numbers right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, at) => Math.max(title.length, ...rows.map((row) => row[at]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((cell, at) => (at < 2 ? cell.padEnd(widths[at]!) : cell.padStart(widths[at]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export const ms = (value: number) => value.toFixed(1);
export const ratio = (value: number) => `${value.toFixed(2)}x`;
