import type { Field } from './field-type.js';

/** An object of example values of a field table: every field, or only the required ones. */
export function exampleObject(
  table: Readonly<Record<string, Field>>,
  options: { requiredOnly: boolean },
): Record<string, unknown> {
  const example: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(table)) {
    if (options.requiredOnly && !field.required) continue;
    example[name] = field.example(name);
  }
  return example;
}
