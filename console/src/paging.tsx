import type { components } from '../generated/api';
import { Field } from './ui';

type Meta = components['schemas']['PageMeta'];

/** Previous and next page, and where this page lies. */
export function Pager({ meta, page, onPage }: { meta: Meta; page: number; onPage: (page: number) => void }) {
  return (
    <nav class="pager" aria-label="Pages of the list">
      <button type="button" class="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous page
      </button>
      <span role="status">
        Page {meta.currentPage} of {meta.totalPages} ({meta.totalItems.toLocaleString('en')} records)
      </span>
      <button
        type="button"
        class="secondary"
        disabled={page >= meta.totalPages}
        onClick={() => onPage(page + 1)}
      >
        Next page
      </button>
    </nav>
  );
}

/** The filled fields of a filter form, as query parameters (empty ones left out). */
export function filledValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, value] of new FormData(form)) {
    if (typeof value === 'string' && value.trim() !== '') values[name] = value.trim();
  }
  return values;
}

/** The `limit` of a list: the sizes a page offers, and the one it starts with. */
export function PerPage({ sizes, initial }: { sizes: readonly number[]; initial: number }) {
  return (
    <Field label="Per page">
      <select name="limit" defaultValue={String(initial)}>
        {sizes.map((n) => (
          <option key={n} value={String(n)}>
            {n}
          </option>
        ))}
      </select>
    </Field>
  );
}
