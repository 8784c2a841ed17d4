import type { Queryable } from '../db/database.js';
import { type ListPageStatement, type PageRow, selectListPage } from '../sql/list-page.js';
import { FilteredTotals } from './filtered-totals.js';
import type { ListQuery } from './list-params.js';

/**
 * One page of a list for a tenant. A filtered list's total is counted by the statement once and then
 * reused, while the list's row_counts version holds, for the next pages of the same filters
 * (src/read/filtered-totals.ts); the statement itself checks that version in its own snapshot.
 */
export async function readListPage(
  db: Queryable,
  totals: FilteredTotals,
  statement: ListPageStatement,
  tenantId: number,
  query: ListQuery,
): Promise<PageRow> {
  const { filters, sortField, descending, page, limit } = query;
  const filtered = Object.keys(filters).length > 0;
  const totalKey = filtered ? FilteredTotals.key(tenantId, statement.list.counter, filters) : '';
  const known = filtered ? totals.get(totalKey) : undefined;
  const row = await selectListPage(db, statement, {
    tenantId,
    filters,
    sortField,
    descending,
    page,
    limit,
    known,
  });
  if (filtered) totals.set(totalKey, { version: row.version!, total: row.total });
  return row;
}
