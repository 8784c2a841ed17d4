/** A job request refused: 400 naming fields or the job's problem, 404, or 409 (the job's state). */
export class JobRefusal extends Error {
  constructor(
    readonly statusCode: 400 | 404 | 409,
    readonly errors: readonly ({ field: string | null; message: string } | { message: string })[],
  ) {
    super(`job request refused (${statusCode})`);
    this.name = 'JobRefusal';
  }
}

export const JOB_NOT_FOUND = 'Job not found';
export const jobNotFound = () => new JobRefusal(404, [{ message: JOB_NOT_FOUND }]);
/** 409: what the job's state does not allow. */
export const wrongState = (action: string, state: string) =>
  new JobRefusal(409, [{ message: `The job's state is ${state}: ${action}` }]);
