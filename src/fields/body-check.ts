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

/**
 * A body checked against its declaration: every problem, or the value with the declared defaults
 * filled in. Unknown fields come first, then the properties in their declared order.
 */
export function checkBody<T extends TObject>(schema: T, body: unknown): Checked<Static<T>> {
  const messages = { ...DEFAULT_MESSAGES, ...(schema as { errorMessage?: BodyMessages }).errorMessage };
  if (!isObject(body)) return { ok: false, errors: [{ field: null, message: messages.type }] };
  const properties: Record<string, TSchema> = schema.properties;
  const required: readonly string[] = schema.required ?? [];
  const errors: FieldError[] = Object.keys(body)
    .filter((name) => !Object.hasOwn(properties, name))
    .map((field) => ({ field, message: messages.unknown }));
  const value: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (!Object.hasOwn(body, name) || body[name] === undefined) {
      if (required.includes(name)) errors.push({ field: name, message: messages.required });
      else if ('default' in property) value[name] = structuredClone(property.default);
    } else if (checkerOf(property)(body[name])) {
      value[name] = body[name];
    } else {
      errors.push({ field: name, message: messageOf(property, name) });
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const least = (schema as { minProperties?: number }).minProperties;
  if (least !== undefined && Object.keys(body).length < least) {
    return { ok: false, errors: [{ field: null, message: messages.minProperties }] };
  }
  return { ok: true, value: value as Static<T> };
}
