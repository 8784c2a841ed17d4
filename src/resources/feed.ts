import { dateTime, type Field } from '../fields/field.js';
import type { BatchResource } from './batch-resource.js';
import { batchResources } from './index.js';
import type { ListResource } from './list-resource.js';
import { listResources } from './lists.js';

/**
 * One resource of the change feed (GET /v1/changes, extensions.md 10), derived from its batch
 * declaration and, when it has one, its list: nothing here is written per resource.
 * - A resource with a list (customers, deliveries) is shown as its list shows it, items included,
 *   plus the system columns that keep rows out of the list or say why (a delivery's acknowledged_at,
 *   rejected_at and rejection_reason: an acknowledgement, a rejection, a requeue are changes).
 * - Master data is shown with its batch fields plus created_at and updated_at.
 */
export interface FeedResource {
  /** The `resource` parameter: the batch resource's name (products, payment-methods, ...). */
  readonly name: string;
  readonly source: BatchResource;
  /** The list whose objects the feed shows, if the resource has one. */
  readonly list: ListResource | undefined;
  /** Columns shown after the fields (system columns, never sent in a batch). */
  readonly extra: Readonly<Record<string, Field>>;
  /** Of the extra columns, those never null (set on insert): for the OpenAPI schema. */
  readonly alwaysSet: readonly string[];
  /** The OpenAPI schema of one record: the list's own when the feed adds nothing to it. */
  readonly schemaName: string;
}

const created = dateTime({ description: 'when the record was created (UTC)' });
const updated = dateTime({ description: 'when the record was last updated (UTC); null if never' });

/** products -> Product, payment-methods -> PaymentMethod, deliveries -> Delivery. */
function singularTitle(name: string): string {
  const singular = name.replace(/ies$/, 'y').replace(/s$/, '');
  return singular
    .split('-')
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');
}

export function feedResource(source: BatchResource, lists: readonly ListResource[]): FeedResource {
  // The list that shows the fields alone (pending deliveries, not rejected ones): the feed adds the
  // system columns itself, once.
  const list = lists.find((candidate) => candidate.source === source && !candidate.shows?.length);
  let extra: Record<string, Field>;
  let alwaysSet: string[];
  if (list) {
    // The columns that keep rows out of a list or say why (acknowledged, rejected): each is a change.
    extra = { ...source.systemColumns };
    alwaysSet = [];
  } else {
    // A field table may declare its own dates (customers do); the feed adds only those it lacks.
    extra = {};
    if (!('created_at' in source.fields)) extra.created_at = created;
    if (!('updated_at' in source.fields)) extra.updated_at = updated;
    alwaysSet = 'created_at' in extra ? ['created_at'] : [];
  }
  const adds = Object.keys(extra).length > 0;
  return {
    name: source.name,
    source,
    list,
    extra,
    alwaysSet,
    schemaName: list && !adds ? list.openapi.schema.name : `${singularTitle(source.name)}Change`,
  };
}

/** Every resource of the feed, in the order of the batch endpoints. */
export const feedResources: readonly FeedResource[] = batchResources.map((source) =>
  feedResource(source, listResources),
);

export function feedResourceNamed(name: string): FeedResource | undefined {
  return feedResources.find((feed) => feed.name === name);
}
