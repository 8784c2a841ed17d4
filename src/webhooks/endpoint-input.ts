import Type, { type Static } from 'typebox';
import { decodeCursor, STALE } from '../feed/cursor.js';
import { STALE_AFTER_MESSAGE } from '../feed/params.js';
import { type Checked, checkBody, type FieldError } from '../fields/body-check.js';
import { feedResourceNamed, feedResources } from '../resources/feed.js';

/*
 * The bodies of the webhook management endpoints (extensions.md 11), declared once: the routes take
 * these schemas, their check (checkBody) runs before anything is written, and the OpenAPI document
 * reads them. Every problem is named by its field, in the read side's 400 shape (section 6). An
 * unknown field is refused too: a misspelt "batchSize" silently ignored would leave the default in
 * place. Whether the URL's host may be reached is judged afterwards, by src/webhooks/addresses.ts.
 */

export type { Checked, FieldError };

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
  /** A replay's answer names the endpoint's own resources instead (replayResourceMessage). */
  resource: "Must be one of the endpoint's resources",
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

/** An absolute http(s) URL as the spec allows it; http:// is judged later, by the address rules. */
function parseUrl(value: string): URL | undefined {
  // Counted in UTF-16 units, as it always was: stricter than maxLength's characters.
  if (value.length > MAX_URL_LENGTH || /[\s#]/.test(value)) return undefined;
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

const resourceName = Type.Enum([...RESOURCE_NAMES]);

// The URL parser decides what a URL is (parseUrl); `format: uri` is said to the document only, since
// a JSON Schema check of RFC 3986 would refuse what the parser takes (an IDN host, `[` in a query).
const url = Type.Refine(
  Type.String({
    documentOnly: { format: 'uri' },
    maxLength: MAX_URL_LENGTH,
    description:
      'absolute https:// URL without user info or fragment (http:// only to hosts inside WEBHOOK_ALLOWED_NETWORKS); its host must resolve to public addresses only',
    errorMessage: inputMessages.url,
  }),
  (value) => parseUrl(value) !== undefined,
);
const resources = Type.Array(resourceName, {
  minItems: 1,
  uniqueItems: true,
  description: 'the change feed resources whose changes are sent',
  errorMessage: inputMessages.resources,
});
const batchSize = Type.Integer({
  minimum: BATCH_SIZE.min,
  maximum: BATCH_SIZE.max,
  description: 'records per delivery',
  errorMessage: inputMessages.batchSize,
});
const description = Type.Union([Type.String({ maxLength: MAX_DESCRIPTION_LENGTH }), Type.Null()], {
  errorMessage: inputMessages.description,
});

/** POST /v1/webhooks. */
export const createEndpointBody = Type.Object(
  {
    url,
    resources,
    from: Type.Optional(
      // null is taken for the default, as it always was.
      Type.Union([Type.Enum(['now', 'start']), Type.Null()], {
        default: 'now',
        description:
          'now: changes committed after the endpoint was made; start: the whole feed first (null: now)',
        errorMessage: inputMessages.from,
      }),
    ),
    batch_size: Type.Optional({ ...batchSize, default: BATCH_SIZE.default }),
    description: Type.Optional({ ...description, default: null }),
  },
  { additionalProperties: false },
);

const PATCH_FIELDS = ['url', 'resources', 'description', 'batch_size', 'status'];

/** PATCH /v1/webhooks/{id}: any of its fields, at least one. */
export const changeEndpointBody = Type.Object(
  {
    url: Type.Optional(url),
    resources: Type.Optional({
      ...resources,
      description: 'a resource added starts at the feed as it is now',
    }),
    batch_size: Type.Optional(batchSize),
    description: Type.Optional(description),
    status: Type.Optional(
      Type.Enum(['active', 'paused'], {
        description: 'active again: resumes with the first change not taken',
        errorMessage: inputMessages.status,
      }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    errorMessage: { minProperties: `Give at least one of ${PATCH_FIELDS.join(', ')}` },
  },
);

/**
 * POST /v1/webhooks/{id}/replay. Its shape is checked from here (checkReplay); which resources it may
 * name and which cursors it takes depend on the endpoint and the feed, so those rules are checkReplay's.
 * A resource missing or not the endpoint's has the one message, as it always had.
 */
export const replayEndpointBody = Type.Object(
  {
    resource: { ...resourceName, errorMessage: inputMessages.resource },
    after: Type.Optional(
      Type.String({
        description: 'a change-feed cursor (GET /v1/changes `after`)',
        errorMessage: inputMessages.after,
      }),
    ),
  },
  { additionalProperties: false, errorMessage: { required: inputMessages.resource } },
);

/**
 * A replay naming no resource of the endpoint: the message lists the endpoint's resources, the only
 * ones it may name, rather than every resource of the feed.
 */
export const replayResourceMessage = (resources: readonly string[]) =>
  `${inputMessages.resource}: ${resources.join(', ')}`;

/** Where a replay starts: after a cursor's position, or at the start of the feed. */
export interface ReplayInput {
  resource: string;
  xid: string;
  key: string[] | null;
  t: string | null;
}

/**
 * A replay's body checked against its declaration and the endpoint: the resource must be one of the
 * endpoint's, and `after` a cursor of that resource from the feed's current generation. A resource
 * refused is answered alone with the unknown fields: its cursor cannot be read without it.
 */
export function checkReplay(
  body: unknown,
  endpointResources: readonly string[],
  generation: number,
): Checked<ReplayInput> {
  let position: ReplayInput | undefined;
  const checked = checkBody(replayEndpointBody, body, {
    across: (given) => {
      const resource = given.resource;
      if (typeof resource !== 'string' || !endpointResources.includes(resource)) {
        return { resource: inputMessages.resource };
      }
      position = { resource, xid: '0', key: null, t: null };
      if (typeof given.after !== 'string') return {};
      const decoded = decodeCursor(feedResourceNamed(resource)!, given.after, generation);
      if (decoded === STALE) return { after: STALE_AFTER_MESSAGE };
      if (!decoded) return { after: inputMessages.after };
      position = {
        resource,
        xid: decoded.xid,
        key: decoded.key ? [...decoded.key] : null,
        t: decoded.handedOut ?? null,
      };
      return {};
    },
  });
  if (!checked.ok) {
    const resourceRefused = checked.errors.some((error) => error.field === 'resource');
    const errors = resourceRefused
      ? checked.errors
          .filter((error) => error.field !== 'after')
          .map((error) =>
            error.field === 'resource'
              ? { ...error, message: replayResourceMessage(endpointResources) }
              : error,
          )
      : checked.errors;
    return { ok: false, errors };
  }
  return { ok: true, value: position! };
}

/** POST /v1/webhooks. */
export function checkCreate(body: unknown): Checked<EndpointInput> {
  const checked = checkBody(createEndpointBody, body);
  if (!checked.ok) return checked;
  const value: Static<typeof createEndpointBody> = checked.value;
  return {
    ok: true,
    value: {
      url: parseUrl(value.url)!,
      resources: value.resources,
      from: value.from ?? 'now',
      batchSize: value.batch_size ?? BATCH_SIZE.default,
      description: value.description ?? null,
    },
  };
}

/** PATCH /v1/webhooks/{id}. */
export function checkPatch(body: unknown): Checked<EndpointChange> {
  const checked = checkBody(changeEndpointBody, body);
  if (!checked.ok) return checked;
  const { url: text, resources: names, batch_size: size, description: text2, status } = checked.value;
  const change: EndpointChange = {};
  if (text !== undefined) change.url = parseUrl(text)!;
  if (names !== undefined) change.resources = names;
  if (size !== undefined) change.batchSize = size;
  if (text2 !== undefined) change.description = text2;
  if (status !== undefined) change.status = status;
  return { ok: true, value: change };
}
