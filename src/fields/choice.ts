import type { Common } from './field-type.js';
import type { JsonSchema } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { pick, type Random } from './random.js';
import { TextField } from './text.js';

/** A string restricted to a fixed set of values (Y/N flags, enumerations). Case-sensitive. */
export class ChoiceField extends TextField {
  override readonly kind = 'choice';
  readonly values: readonly string[];
  constructor(values: readonly string[], options: Common) {
    super({ ...options, max: Math.max(...values.map((v) => v.length)) });
    this.values = values;
  }

  protected override checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (!this.values.includes(value)) {
      errors.push(m.oneOf(this.values));
      return undefined;
    }
    return value;
  }

  override valueSchema(): JsonSchema {
    return { type: 'string', enum: [...this.values] };
  }

  override example(): unknown {
    return this.values[0];
  }

  override generate(rng: Random): unknown {
    return pick(rng, this.values);
  }
}
