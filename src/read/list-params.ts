import type { ListResource } from '../resources/list-resource.js';
import type { ParamRule, ParsedQuery } from './query-params.js';

/** Pages count from 1 (backoffice-api.md 4.1, 4.2). */
const PAGE_RULE: ParamRule = { kind: 'integer', min: 1, default: 1 };

/**
 * A list's query parameters and their rules (backoffice-api.md 4.1, 4.2 and 8; extensions.md 6), in
 * the order they are documented: its filters (a text filter as long as its field allows, or the
 * contract's own number when the declaration gives one; a since filter a date), then sort, page and
 * limit.
 */
export function listParamRules(list: ListResource): Readonly<Record<string, ParamRule>> {
  const rules: Record<string, ParamRule> = {};
  for (const [name, filter] of Object.entries(list.filters)) {
    rules[name] = filter.match === 'equals' ? { kind: 'text', max: filter.maxLength } : { kind: 'date' };
  }
  const { field } = list.sort;
  rules.sort = {
    kind: 'choice',
    values: sortFieldsOf(list).flatMap((name) => [name, `-${name}`]),
    default: list.sort.default === 'descending' ? `-${field}` : field,
  };
  rules.page = PAGE_RULE;
  rules.limit = { kind: 'integer', min: 1, max: list.limit.max, default: list.limit.default };
  return rules;
}

/** The fields `sort` may name: the list's own sort field first. */
export function sortFieldsOf(list: ListResource): string[] {
  return [list.sort.field, ...(list.sort.others ?? []).map((other) => other.field)];
}

/** A list request once its query string obeys the rules. */
export interface ListQuery {
  /** The filters given, by parameter: none means the unfiltered list. */
  filters: Record<string, string>;
  /** The field sorted by: list.sort.field unless `sort` named another. */
  sortField: string;
  descending: boolean;
  page: number;
  limit: number;
  /** Every parameter as given but page and limit, the sort's default included: for the links. */
  linkFilters: Record<string, string | number | undefined>;
}

/** The values checkQuery gave for listParamRules(list), as the page needs them. */
export function listQuery(list: ListResource, values: ParsedQuery): ListQuery {
  const { page, limit, ...linkFilters } = values;
  const filters: Record<string, string> = {};
  for (const name of Object.keys(list.filters)) {
    const value = values[name];
    if (value !== undefined) filters[name] = String(value);
  }
  return {
    filters,
    sortField: String(values.sort).replace(/^-/, ''),
    descending: String(values.sort).startsWith('-'),
    page: page as number,
    limit: limit as number,
    linkFilters,
  };
}
