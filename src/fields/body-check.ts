import type { Static, TObject, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

/*
 * The check of a declared request body (a route's `schema.body`, a TypeBox object), run by the
 * handler where the hand checks ran: after the body's JSON is read and inside the Idempotency-Key's
 * work, so a refusal is kept for its key (extensions.md 8). Every problem is named by its field in the
 * read side's 400 shape (extensions.md 6). The messages are the declaration's own: `errorMessage`
 * on a property is its one message; on the object it names the messages of the body as a whole.
 */

/** A problem with the body, named by its field (null: the body as a whole). */
export interface FieldError {
  field: string | null;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** The messages an object declaration may set for the body as a whole. */
export interface BodyMessages {
  type?: string;
  unknown?: string;
  required?: string;
  /** The object's minProperties broken. */
  minProperties?: string;
}

const DEFAULT_MESSAGES = {
  type: 'Request body must be a JSON object',
  unknown: 'Unknown field',
  required: 'Field is required',
  minProperties: 'Give at least one field',
};

/** A check TypeBox does not express as JSON Schema (Type.Refine): kept off the document. */
interface Refinement {
  check: (value: unknown) => boolean;
}

const checkers = new WeakMap<TSchema, (value: unknown) => boolean>();

function checkerOf(schema: TSchema): (value: unknown) => boolean {
  let check = checkers.get(schema);
  if (!check) {
    const compiled = Compile(schema);
    const refinements = ((schema as { '~refine'?: Refinement[] })['~refine'] ?? []).slice();
    check = (value) => compiled.Check(value) && refinements.every((refinement) => refinement.check(value));
    checkers.set(schema, check);
  }
  return check;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const messageOf = (property: TSchema, name: string): string => {
  const message = (property as { errorMessage?: unknown }).errorMessage;
  if (typeof message !== 'string') throw new Error(`request schema: property ${name} has no errorMessage`);
  return message;
};

/** How a body's problems are gathered, beyond its declaration. */
export interface BodyRules {
  /** Unknown fields listed after the declared ones (they come first unless this is set). */
  unknownLast?: boolean;
  /**
   * Rules across fields: a message by field, taking the place of the field's own check when the
   * field is given (a delimiter given with an NDJSON format is refused as such, whatever it is).
   */
  across?: (body: Readonly<Record<string, unknown>>) => Readonly<Record<string, string | undefined>>;
}

/**
 * A body checked against its declaration: every problem, or the value with the declared defaults
 * filled in. Unknown fields are refused when the declaration says `additionalProperties: false`
 * (else left out of the value); they come first, then the properties in their declared order.
 */
export function checkBody<T extends TObject>(
  schema: T,
  body: unknown,
  rules: BodyRules = {},
): Checked<Static<T>> {
  const messages = { ...DEFAULT_MESSAGES, ...(schema as { errorMessage?: BodyMessages }).errorMessage };
  if (!isObject(body)) return { ok: false, errors: [{ field: null, message: messages.type }] };
  const properties: Record<string, TSchema> = schema.properties;
  const required: readonly string[] = schema.required ?? [];
  const unknown: FieldError[] =
    (schema as { additionalProperties?: unknown }).additionalProperties === false
      ? Object.keys(body)
          .filter((name) => !Object.hasOwn(properties, name))
          .map((field) => ({ field, message: messages.unknown }))
      : [];
  const across = rules.across?.(body) ?? {};
  const errors: FieldError[] = rules.unknownLast ? [] : unknown;
  const value: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    const acrossMessage = Object.hasOwn(across, name) ? across[name] : undefined;
    if (!Object.hasOwn(body, name) || body[name] === undefined) {
      if (required.includes(name)) errors.push({ field: name, message: messages.required });
      else if ('default' in property) value[name] = structuredClone(property.default);
    } else if (acrossMessage !== undefined) {
      errors.push({ field: name, message: acrossMessage });
    } else if (checkerOf(property)(body[name])) {
      value[name] = body[name];
    } else {
      errors.push({ field: name, message: messageOf(property, name) });
    }
  }
  if (rules.unknownLast) errors.push(...unknown);
  if (errors.length > 0) return { ok: false, errors };
  const least = (schema as { minProperties?: number }).minProperties;
  if (least !== undefined && Object.keys(body).length < least) {
    return { ok: false, errors: [{ field: null, message: messages.minProperties }] };
  }
  return { ok: true, value: value as Static<T> };
}
