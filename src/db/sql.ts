/** Quotes an identifier that comes from code, never from a request. */
export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${name}`);
  return `"${name}"`;
}

/** Quotes a text constant that comes from code (a declaration), never from a request. */
export function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
