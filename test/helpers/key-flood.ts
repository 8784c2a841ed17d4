/**
 * A batch of one item followed by as many short unknown keys as fit in `bytes`: the body that made
 * errors, and JSON.parse, cost the most for its size (V8 builds such an object key by key).
 */
export function keyFlood(bytes: number, code = 'FLOOD'): { text: string; keys: number } {
  const parts: string[] = [];
  let size = 40;
  for (let i = 0; size < bytes; i++) {
    const part = `"_${i.toString(36)}":1`;
    parts.push(part);
    size += part.length + 1;
  }
  return { text: `[{"code":"${code}","description":"d",${parts.join(',')}}]`, keys: parts.length };
}
