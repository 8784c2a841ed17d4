/**
 * A field whose value must name a row of another batch resource by its key (stocks, factors and prices
 * name a product by its code). Declared in the field table; the write statement counts the rows that
 * name no row (no foreign key), and one query names them for the 400 (src/sql/batch-write.ts).
 */
export interface Reference {
  /**
   * The resource referred to. A function, so resources can refer to each other whatever order their
   * modules load in; the field layer knows only what it needs of it.
   */
  readonly resource: () => {
    readonly name: string;
    readonly table: string;
    readonly path: string;
    readonly key: readonly string[];
  };
  /** The resource's key field the value is compared with: its one key field (checked when first used). */
  readonly field: string;
  /** The problem reported for a value that names no row (messages.ts). */
  readonly message: string;
}
