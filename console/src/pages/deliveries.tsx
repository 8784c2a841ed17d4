import { useState } from 'preact/hooks';
import type { components } from '../../generated/api';
import { filledValues, Pager, PerPage } from '../paging';
import { api, messageOf } from '../session';
import { Feedback, Field, useAction, usePoll } from '../ui';

type Delivery = components['schemas']['Delivery'] & {
  rejected_at?: string | null;
  rejection_reason?: string | null;
};
type Page = { data: Delivery[]; meta: components['schemas']['PageMeta'] };
type List = 'pending' | 'rejected';

const notFoundText = (notFound: readonly string[]) =>
  notFound.length > 0 ? ` Not found: ${notFound.join(', ')}.` : '';

/** The pending and rejected lists with their filters; acknowledge, reject with a reason, requeue. */
export function DeliveriesPage() {
  const [list, setList] = useState<List>('pending');
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [page, setPage] = useState(1);
  const [shown, setShown] = useState<Page | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [reason, setReason] = useState('');
  const [tick, setTick] = useState(0);
  const action = useAction();
  usePoll(
    async () => {
      const path = list === 'pending' ? '/v1/deliveries/pending' : '/v1/deliveries/rejected';
      const {
        data,
        error: refused,
        response,
      } = await api.GET(path, { params: { query: { ...filters, page } as never } });
      if (!data) {
        setError(messageOf(refused, response.status));
        return;
      }
      setError(null);
      setShown(data as Page);
    },
    30_000,
    true,
    [list, JSON.stringify(filters), page, tick],
  );
  const codes = [...selected];
  const done = (note: string) => {
    setSelected(new Set());
    setTick((n) => n + 1);
    return note;
  };
  const toggle = (code: string) => {
    const next = new Set(selected);
    if (next.has(code)) next.delete(code);
    else next.add(code);
    setSelected(next);
  };
  const switchTo = (next: List) => {
    setList(next);
    setPage(1);
    setSelected(new Set());
    setShown(null);
  };
  return (
    <>
      <h1>Deliveries</h1>
      <fieldset class="tabs">
        <legend>List</legend>
        <button type="button" aria-pressed={list === 'pending'} onClick={() => switchTo('pending')}>
          Pending
        </button>
        <button type="button" aria-pressed={list === 'rejected'} onClick={() => switchTo('rejected')}>
          Rejected
        </button>
      </fieldset>
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setFilters(filledValues(event.currentTarget as HTMLFormElement));
          setPage(1);
        }}
      >
        <Field label="Customer code">
          <input name="client_id" maxLength={18} />
        </Field>
        <Field label="Seller">
          <input name="seller_id" maxLength={18} />
        </Field>
        <Field label="Reported from (yyyy-mm-dd)">
          <input name="reported_from" placeholder="2024-01-31" />
        </Field>
        <Field label="Sort">
          <select name="sort" defaultValue="-reported_at">
            <option value="-reported_at">newest first</option>
            <option value="reported_at">oldest first</option>
          </select>
        </Field>
        <PerPage sizes={[10, 25, 100, 500]} initial={100} />
        <div class="actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      <Feedback error={error} />
      <div class="actions selection">
        <span>{codes.length} selected</span>
        {list === 'pending' && (
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              action.run(
                () => api.POST('/v1/deliveries/acknowledge', { body: codes as never }),
                (data) => {
                  const r = data as { acknowledged: number; notFound: string[] };
                  return done(`${r.acknowledged} acknowledged.${notFoundText(r.notFound)}`);
                },
              )
            }
          >
            Acknowledge selected
          </button>
        )}
        <Field label="Reason">
          <input
            value={reason}
            maxLength={500}
            onInput={(event) => setReason((event.currentTarget as HTMLInputElement).value)}
          />
        </Field>
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            action.run(
              () =>
                api.POST('/v1/deliveries/reject', { body: codes.map((code) => ({ code, reason })) as never }),
              (data) => {
                const r = data as { rejected: number; notFound: string[] };
                setReason('');
                return done(`${r.rejected} rejected.${notFoundText(r.notFound)}`);
              },
            )
          }
        >
          Reject selected
        </button>
        {list === 'rejected' && (
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              action.run(
                () => api.POST('/v1/deliveries/requeue', { body: codes as never }),
                (data) => {
                  const r = data as { requeued: number; notFound: string[] };
                  return done(`${r.requeued} requeued.${notFoundText(r.notFound)}`);
                },
              )
            }
          >
            Requeue selected
          </button>
        )}
      </div>
      <Feedback error={action.error} note={action.note} />
      {shown && (
        <>
          <Pager meta={shown.meta} page={page} onPage={setPage} />
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Select</th>
                  <th scope="col">Code</th>
                  <th scope="col">Customer</th>
                  <th scope="col">Seller</th>
                  <th scope="col">Status</th>
                  <th scope="col">Reported</th>
                  {list === 'rejected' && <th scope="col">Rejected</th>}
                  {list === 'rejected' && <th scope="col">Reason</th>}
                </tr>
              </thead>
              <tbody>
                {shown.data.map((delivery) => (
                  <tr key={delivery.code}>
                    <td data-label="Select">
                      <label class="check">
                        <input
                          type="checkbox"
                          checked={selected.has(delivery.code)}
                          onChange={() => toggle(delivery.code)}
                        />
                        Select {delivery.code}
                      </label>
                    </td>
                    <td data-label="Code">{delivery.code}</td>
                    <td data-label="Customer">{delivery.client_id}</td>
                    <td data-label="Seller">{delivery.seller_id}</td>
                    <td data-label="Status">{delivery.status_description ?? delivery.status_code ?? ''}</td>
                    <td data-label="Reported">{delivery.reported_at ?? ''}</td>
                    {list === 'rejected' && <td data-label="Rejected">{delivery.rejected_at ?? ''}</td>}
                    {list === 'rejected' && <td data-label="Reason">{delivery.rejection_reason ?? ''}</td>}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </>
  );
}
