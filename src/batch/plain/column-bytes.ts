import { COMMA, NULL_TEXT } from './json-bytes.js';
import type { PlainField } from './plain-plan.js';

/** A column's literal being written: its bytes so far, reused from batch to batch (the check is synchronous). */
export class ColumnBytes {
  bytes = Buffer.allocUnsafeSlow(16 * 1024);
  length = 0;
  /** Rows of the current statement that hold a value (not null). */
  present = 0;
  /**
   * NULLs not written yet: written before the column's next value, or never if the statement's
   * column holds none (it is then {}, and an optional field most items leave out costs nothing).
   */
  nulls = 0;

  reserve(more: number): Uint8Array {
    if (this.length + more > this.bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.length + more));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    return this.bytes;
  }

  writeNulls(): void {
    const out = this.reserve(this.nulls * 5);
    let at = this.length;
    for (; this.nulls > 0; this.nulls--) {
      out[at++] = NULL_TEXT[0]!;
      out[at++] = NULL_TEXT[1]!;
      out[at++] = NULL_TEXT[2]!;
      out[at++] = NULL_TEXT[3]!;
      out[at++] = COMMA;
    }
    this.length = at;
  }
}

/** An absent value (left out, null or empty): the field's default, NULL unless it has one. */
export function writeAbsent(field: PlainField, column: ColumnBytes): void {
  const { absent } = field;
  if (absent === null) {
    column.nulls++;
    return;
  }
  if (column.nulls > 0) column.writeNulls();
  const out = column.reserve(absent.length + 1);
  out.set(absent, column.length);
  out[column.length + absent.length] = COMMA;
  column.length += absent.length + 1;
  column.present++;
}
