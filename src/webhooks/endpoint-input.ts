import { feedResources } from '../resources/feed.js';

/*
 * The bodies of the webhook management endpoints (extensions.md 11), checked before anything is
 * written: every problem is named by its field, in the read side's 400 shape (section 6). An unknown
 * field is refused too: a misspelt "batchSize" silently ignored would leave the default in place.
 * Whether the URL's host may be reached is judged afterwards, by src/webhooks/addresses.ts.
 */

export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 200;
export const BATCH_SIZE = { min: 1, max: 1000, default: 100 } as const;
/** Endpoints a tenant may have at once. */
export const MAX_ENDPOINTS_PER_TENANT = 16;

export const RESOURCE_NAMES: readonly string[] = feedResources.map((feed) => feed.name);

export const inputMessages = {
  object: 'Request body must be a JSON object',
  unknown: 'Unknown field',
  required: 'Field is required',
  url: `Must be an absolute https:// URL of at most ${MAX_URL_LENGTH} characters, without user name, password or fragment`,
  resources: `Must be a non-empty array of distinct change feed resources: ${RESOURCE_NAMES.join(', ')}`,
  from: 'Must be "now" or "start"',
  batchSize: `Must be a whole number from ${BATCH_SIZE.min} to ${BATCH_SIZE.max}`,
  description: `Must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters, or null`,
  status: 'Must be "active" or "paused"',
  resource: `Must be one of the endpoint's resources: ${RESOURCE_NAMES.join(', ')}`,
  after: 'Must be the next cursor of an earlier answer for this resource',
} as const;

export interface EndpointInput {
  url: URL;
  resources: string[];
  from: 'now' | 'start';
  batchSize: number;
  description: string | null;
}

export interface EndpointChange {
  url?: URL;
  resources?: string[];
  batchSize?: number;
  description?: string | null;
  status?: 'active' | 'paused';
}

/** A problem with the body, named by its field (null: the body as a whole). */
export interface FieldError {
  field: string | null;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

const CREATE_FIELDS = ['url', 'resources', 'from', 'batch_size', 'description'];
const PATCH_FIELDS = ['url', 'resources', 'description', 'batch_size', 'status'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An absolute http(s) URL as the spec allows it; http:// is judged later, by the address rules. */
function checkUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH || /[\s#]/.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username !== '' || url.password !== '' || url.hostname === '') return undefined;
  return url;
}

function checkResources(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || value.length > RESOURCE_NAMES.length) return undefined;
  if (!value.every((name) => typeof name === 'string' && RESOURCE_NAMES.includes(name))) return undefined;
  if (new Set(value).size !== value.length) return undefined;
  return value as string[];
}

function checkBatchSize(value: unknown): number | undefined {
  return Number.isInteger(value) && (value as number) >= BATCH_SIZE.min && (value as number) <= BATCH_SIZE.max
    ? (value as number)
    : undefined;
}

function checkDescription(value: unknown): string | null | undefined {
  if (value === null) return null;
  return typeof value === 'string' && [...value].length <= MAX_DESCRIPTION_LENGTH ? value : undefined;
}

/** Fields of a body this endpoint does not take, each named. */
function unknownFields(body: Record<string, unknown>, known: readonly string[]): FieldError[] {
  return Object.keys(body)
    .filter((name) => !known.includes(name))
    .map((field) => ({ field, message: inputMessages.unknown }));
}

/** POST /v1/webhooks. */
export function checkCreate(body: unknown): Checked<EndpointInput> {
  if (!isObject(body)) return { ok: false, errors: [{ field: null, message: inputMessages.object }] };
  const errors = unknownFields(body, CREATE_FIELDS);
  const url = body.url === undefined ? undefined : checkUrl(body.url);
  if (body.url === undefined) errors.push({ field: 'url', message: inputMessages.required });
  else if (!url) errors.push({ field: 'url', message: inputMessages.url });
  const resources = body.resources === undefined ? undefined : checkResources(body.resources);
  if (body.resources === undefined) errors.push({ field: 'resources', message: inputMessages.required });
  else if (!resources) errors.push({ field: 'resources', message: inputMessages.resources });
  const from = body.from ?? 'now';
  const fromOk = from === 'now' || from === 'start';
  if (!fromOk) errors.push({ field: 'from', message: inputMessages.from });
  const batchSize = body.batch_size === undefined ? BATCH_SIZE.default : checkBatchSize(body.batch_size);
  if (batchSize === undefined) errors.push({ field: 'batch_size', message: inputMessages.batchSize });
  const description = body.description === undefined ? null : checkDescription(body.description);
  if (description === undefined) errors.push({ field: 'description', message: inputMessages.description });
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: {
      url: url!,
      resources: resources!,
      from: from as 'now' | 'start',
      batchSize: batchSize!,
      description: description!,
    },
  };
}

/** PATCH /v1/webhooks/{id}: any of its fields, at least one. */
export function checkPatch(body: unknown): Checked<EndpointChange> {
  if (!isObject(body)) return { ok: false, errors: [{ field: null, message: inputMessages.object }] };
  const errors = unknownFields(body, PATCH_FIELDS);
  const change: EndpointChange = {};
  if (body.url !== undefined) {
    const url = checkUrl(body.url);
    if (url) change.url = url;
    else errors.push({ field: 'url', message: inputMessages.url });
  }
  if (body.resources !== undefined) {
    const resources = checkResources(body.resources);
    if (resources) change.resources = resources;
    else errors.push({ field: 'resources', message: inputMessages.resources });
  }
  if (body.batch_size !== undefined) {
    const batchSize = checkBatchSize(body.batch_size);
    if (batchSize !== undefined) change.batchSize = batchSize;
    else errors.push({ field: 'batch_size', message: inputMessages.batchSize });
  }
  if (body.description !== undefined) {
    const description = checkDescription(body.description);
    if (description !== undefined) change.description = description;
    else errors.push({ field: 'description', message: inputMessages.description });
  }
  if (body.status !== undefined) {
    if (body.status === 'active' || body.status === 'paused') change.status = body.status;
    else errors.push({ field: 'status', message: inputMessages.status });
  }
  if (errors.length > 0) return { ok: false, errors };
  if (Object.keys(change).length === 0) {
    return {
      ok: false,
      errors: [{ field: null, message: `Give at least one of ${PATCH_FIELDS.join(', ')}` }],
    };
  }
  return { ok: true, value: change };
}
