import { batchParamRules } from '../../batch/batch-options.js';
import { querySchema } from '../../http/route-schema.js';

/*
 * The query string of every batch endpoint (extensions.md 9), declared once from the options' rules
 * (src/batch/batch-options.ts, one rule in one place): given to the route, checked by batchOptions
 * before the body is read, and shown by the document. Other parameters are ignored, as they always
 * were on these endpoints.
 */

const MEANINGS: Readonly<Record<keyof typeof batchParamRules, string>> = {
  outcomes:
    'true: the answer lists every item in array order (`items`; with on_invalid=skip, every item not ' +
    'rejected: a rejected one is in `errors`): its index, its key fields as sent, and ' +
    'created, updated or ignored; a repeated key has the outcome at the occurrence applied (first for ' +
    'insert-if-absent, last for upserts) and ignored with duplicateOf at the others. Another value: 400 ' +
    'naming the parameter',
  dry_run:
    'true: everything is validated (references included) and counted as a real run would, nothing is ' +
    'written: 200 "Validation passed". Invalid input: the same 400 as a real run. Another value: 400 ' +
    'naming the parameter',
  on_invalid:
    'skip: invalid items (unknown references included) are left out and the others written in one ' +
    'transaction; the 201 adds `rejected` and `errors` in the 400 shape. All invalid, or an array rule ' +
    'broken: the usual 400. Another value: 400 naming the parameter',
};

export const batchQuery = querySchema(batchParamRules, MEANINGS, [], 'ignored');
