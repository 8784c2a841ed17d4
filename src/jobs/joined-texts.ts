/*
 * Many short strings sent between threads as one: a worker's message of a chunk's keys cost as much
 * to clone, string by string, on both threads as the check the thread saved; one string and a typed
 * array of where each ends (moved, not copied) cost a fraction, and the receiver cuts out only those
 * it reads.
 */

export interface JoinedTexts {
  text: string;
  /** Where each string ends in `text`. */
  ends: Int32Array;
}

/** The strings joined. */
export function joinTexts(texts: readonly string[]): JoinedTexts {
  const ends = new Int32Array(texts.length);
  let end = 0;
  texts.forEach((text, at) => {
    end += text.length;
    ends[at] = end;
  });
  return { text: texts.join(''), ends };
}

/** The string at `at`. */
export function textAt(texts: JoinedTexts, at: number): string {
  return texts.text.slice(at === 0 ? 0 : texts.ends[at - 1], texts.ends[at]);
}

export const noTexts = (): JoinedTexts => ({ text: '', ends: new Int32Array(0) });
