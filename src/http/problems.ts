/**
 * The catalogue of error answers: every error body of the service is made here, in the spec's shape
 * {statusCode, errors: [...]} (backoffice-api.md 7.1, extensions.md 2 and 6).
 */
export class HttpProblem extends Error {
  readonly statusCode: number;
  readonly errors: readonly object[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(statusCode: number, errors: readonly object[], headers: Record<string, string> = {}) {
    super(`HTTP ${statusCode}`);
    this.name = 'HttpProblem';
    this.statusCode = statusCode;
    this.errors = errors;
    this.headers = headers;
  }

  body() {
    return { statusCode: this.statusCode, errors: this.errors };
  }
}

const arrayProblem = (message: string) => new HttpProblem(400, [{ index: null, field: null, message }]);

export const problems = {
  invalidJson: () => new HttpProblem(400, [{ message: 'Invalid JSON in request body' }]),
  notAnArray: () => arrayProblem('Request body must be an array'),
  emptyArray: () => arrayProblem('Request body cannot be empty'),
  tooManyItems: (max: number) => arrayProblem(`Array exceeds maximum limit of ${max} items`),
  invalidItems: (errors: readonly object[]) => new HttpProblem(400, errors),
  bodyTooLarge: (limit: number) =>
    new HttpProblem(413, [{ message: `Request body exceeds the limit of ${limit} bytes for this endpoint` }]),
  unsupportedMediaType: () => new HttpProblem(415, [{ message: 'Content-Type must be application/json' }]),
  notFound: (method: string, url: string) =>
    new HttpProblem(404, [{ message: `Route ${method} ${url.split('?')[0]} not found` }]),
  clientError: (statusCode: number, message: string) => new HttpProblem(statusCode, [{ message }]),
  /** 500 with one of the spec's four prefixes; detail is safe to show (no SQL, no stack). */
  server: (message: string) => new HttpProblem(500, [{ message }]),
};
