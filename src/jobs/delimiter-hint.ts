import type { FieldError } from '../fields/body-check.js';
import { fieldMessages } from '../fields/messages.js';
import { DELIMITERS } from './job-input.js';

/*
 * A CSV read with the wrong delimiter (a semicolon file sent with the default comma) has a header of
 * one column, the whole header row, and every row is invalid by that one unknown field. The rows'
 * errors stay the batch's own (extensions.md 12: exactly the batch's messages); the job's error says
 * what went wrong instead (docs/decisions/0139-job-delimiter-hint.md).
 */

/**
 * The hint for a CSV job whose row was refused by one unknown field that another delimiter the job
 * takes splits into names of which at least one is a field of the resource (`code;description;unit`);
 * undefined otherwise (an unknown `colour;size` beside known columns is only unknown). The field is
 * the header's text as the file has it.
 */
export function delimiterHint(
  job: { format: 'csv' | 'ndjson'; delimiter: string },
  fieldNames: readonly string[],
  errors: readonly FieldError[] | undefined,
): string | undefined {
  if (job.format !== 'csv' || !errors) return undefined;
  const unknown = errors.filter(
    (error) => error.message === fieldMessages.unknownField && error.field !== null,
  );
  if (unknown.length !== 1) return undefined;
  const header = unknown[0]!.field!;
  const other = DELIMITERS.find(
    (delimiter) =>
      delimiter !== job.delimiter && header.split(delimiter).some((name) => fieldNames.includes(name)),
  );
  if (other === undefined) return undefined;
  const shown = other === '\t' ? '"\\t" (tab)' : JSON.stringify(other);
  return `The header row was read as one column, ${JSON.stringify(header)}: if the file is separated by ${shown}, create the job with "delimiter": ${shown}`;
}
