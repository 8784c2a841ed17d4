import type { Common } from './field-type.js';
import type { Direction, JsonSchema } from './json-schema.js';
import { fieldMessages as m } from './messages.js';
import { int, pad, pick, type Random } from './random.js';
import { TextField } from './text.js';

const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d$/;
/** HH:MM, 00:00 to 23:59: the check's rule, written for the document. */
export const TIME_OF_DAY_PATTERN = '^([01]\\d|2[0-3]):[0-5]\\d$';

/** HH:MM, 00:00 to 23:59 (service windows), stored as varchar(5). */
export class TimeOfDayField extends TextField {
  override readonly kind = 'timeOfDay';
  constructor(options: Common) {
    super({ ...options, max: 5 });
  }

  protected override checkPresent(value: unknown, errors: string[]) {
    if (typeof value !== 'string') {
      errors.push(m.mustBeString);
      return undefined;
    }
    if (!TIME_OF_DAY.test(value)) {
      errors.push(m.timeOfDay);
      return undefined;
    }
    return value;
  }

  override valueSchema(): JsonSchema {
    return { type: 'string', pattern: TIME_OF_DAY_PATTERN };
  }

  override typeNote(_direction: Direction): string {
    return 'HH:MM, 00:00 to 23:59';
  }

  override example(): unknown {
    return '08:00';
  }

  /** Working hours, on the quarter hour. */
  override generate(rng: Random): unknown {
    return `${pad(int(rng, 6, 18), 2)}:${pick(rng, ['00', '15', '30', '45'])}`;
  }
}
