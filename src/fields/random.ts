/**
 * The generator a field type draws its sample values from (src/seed/generate.ts makes it: mulberry32,
 * uniform in [0, 1)). Data sets are compared draw for draw, so a field's generator must keep the
 * number and order of its draws: changing them changes every seeded data set after that field.
 */
export type Random = () => number;

export const pick = <T>(rng: Random, list: readonly T[]): T => list[Math.floor(rng() * list.length)]!;
export const int = (rng: Random, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));
export const pad = (n: number, width: number) => String(n).padStart(width, '0');
