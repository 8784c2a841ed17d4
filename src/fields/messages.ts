/**
 * Every per-field message of backoffice-api.md section 7.1, word for word, plus the few the spec left
 * open (docs/decisions/ says why each exists).
 */
export const fieldMessages = {
  required: 'Field is required',
  mustBeString: 'Field must be a string',
  mustBeInteger: 'Field must be of type integer',
  mustBeDecimal: 'Field must be of type decimal',
  invalidDecimal: 'Field must be a valid decimal (e.g., 1.5, 10.25)',
  maxLength: (max: number) => `Field exceeds maximum length of ${max} characters`,
  maxIntegerDigits: (max: number) => `Field exceeds maximum of ${max} integer digits`,
  maxDecimalPlaces: (max: number) => `Field exceeds maximum of ${max} decimal places`,
  unknownField: 'Unknown field',
  itemMustBeObject: 'Item must be an object',
  // Not in the spec: decided in docs/decisions/ (Validation).
  between: (min: number | string, max: number | string) => `Field must be between ${min} and ${max}`,
  oneOf: (values: readonly string[]) => `Field must be one of ${values.join(', ')}`,
  noNulCharacters: 'Field must not contain NUL characters',
  dateTime: 'Field must be a date and time in the format yyyy-MM-ddTHH:mm:ss',
  unknownProduct: 'Product does not exist in the product master',
  mustBeArray: 'Field must be an array',
  timeOfDay: 'Field must be a time in the format HH:MM',
  tooManyItems: (max: number) => `Field exceeds maximum of ${max} items`,
  duplicateInItems: 'Field must be unique within the items of one record',
} as const;
