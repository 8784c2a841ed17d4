import { useState } from 'preact/hooks';
import type { components } from '../../generated/api';
import { filledValues, PerPage } from '../paging';
import { api, messageOf } from '../session';
import { Feedback, Field, formatCount, usePoll } from '../ui';

type Entry = components['schemas']['ActivityEntry'];
type Resource = NonNullable<Entry['resource']>;

/** The filter's choices: every value of ActivityEntry.resource (the compiler checks each). */
const RESOURCES: readonly Resource[] = [
  'products',
  'stocks',
  'payment-methods',
  'factors',
  'routes',
  'users',
  'prices',
  'customers',
  'deliveries',
  'webhooks',
  'jobs',
];

/** The `before` cursor of a links.next, which the API gives as a whole URL. */
function cursorOf(next: string | null): string | null {
  if (next === null) return null;
  return new URL(next, window.location.origin).searchParams.get('before');
}

const countOrDash = (n: number | null) => (n === null ? '—' : formatCount(n));

/** GET /v1/activity: the tenant's write requests of the last 7 days, newest first. */
export function ActivityPage() {
  const [filters, setFilters] = useState<Record<string, string>>({});
  // The cursors of the pages shown before this one, to go back; the last is this page's.
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const before = cursors[cursors.length - 1];
  usePoll(
    async () => {
      const {
        data,
        error: refused,
        response,
      } = await api.GET('/v1/activity', {
        params: { query: { ...filters, ...(before ? { before } : {}) } as never },
      });
      if (!data) {
        setError(messageOf(refused, response.status));
        return;
      }
      setError(null);
      setEntries(data.data);
      setNext(cursorOf(data.links.next));
    },
    // The newest page follows new requests; an older page stays as it is.
    before === undefined ? 15_000 : 3_600_000,
    true,
    [JSON.stringify(filters), before],
  );
  const pageNumber = cursors.length;
  return (
    <>
      <h1>Activity</h1>
      <p class="small">Write requests of the last 7 days, newest first. Times are UTC.</p>
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setFilters(filledValues(event.currentTarget as HTMLFormElement));
          setCursors([undefined]);
        }}
      >
        <Field label="Outcome">
          <select name="outcome" defaultValue="">
            <option value="">all</option>
            <option value="failed">failed</option>
            <option value="succeeded">succeeded</option>
          </select>
        </Field>
        <Field label="Resource">
          <select name="resource" defaultValue="">
            <option value="">all</option>
            {RESOURCES.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </Field>
        <PerPage sizes={[10, 25, 50, 100]} initial={50} />
        <div class="actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      <Feedback error={error} />
      {entries && (
        <>
          <nav class="pager" aria-label="Pages of the list">
            <button
              type="button"
              class="secondary"
              disabled={pageNumber <= 1}
              onClick={() => setCursors(cursors.slice(0, -1))}
            >
              Newer requests
            </button>
            <span role="status">
              Page {pageNumber} ({entries.length} {entries.length === 1 ? 'request' : 'requests'})
            </span>
            <button
              type="button"
              class="secondary"
              disabled={next === null}
              onClick={() => next !== null && setCursors([...cursors, next])}
            >
              Older requests
            </button>
          </nav>
          {entries.length === 0 ? (
            <p>No write request matches.</p>
          ) : (
            <div class="table-wrap">
              <table class="stack">
                <thead>
                  <tr>
                    <th scope="col">At</th>
                    <th scope="col">Request</th>
                    <th scope="col">Status</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Items</th>
                    <th scope="col">Created / updated / ignored</th>
                    <th scope="col">Idempotency-Key</th>
                    <th scope="col">Request id</th>
                    <th scope="col">Problems</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((entry) => (
                    <tr key={entry.request_id}>
                      <td data-label="At">{entry.at.replace('T', ' ')}</td>
                      <td data-label="Request">
                        {entry.method} {entry.path}
                        {entry.resource !== null && <span class="small"> ({entry.resource})</span>}
                      </td>
                      <td data-label="Status">
                        <span class={entry.status >= 400 ? 'state state-failed' : 'state state-succeeded'}>
                          {entry.status}
                        </span>
                      </td>
                      <td data-label="Duration">{formatCount(entry.duration_ms)} ms</td>
                      <td data-label="Items">{countOrDash(entry.items)}</td>
                      <td data-label="Created / updated / ignored">
                        {countOrDash(entry.created)} / {countOrDash(entry.updated)} /{' '}
                        {countOrDash(entry.ignored)}
                      </td>
                      <td data-label="Idempotency-Key">
                        {entry.idempotency_key ?? '—'}
                        {entry.replayed && <span class="small"> (replayed)</span>}
                      </td>
                      <td data-label="Request id">
                        <code>{entry.request_id}</code>
                      </td>
                      <td data-label="Problems">
                        {entry.problems === null ? '' : messageOf({ errors: entry.problems }, entry.status)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}
