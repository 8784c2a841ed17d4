import { useState } from 'preact/hooks';
import type { components } from '../../generated/api';
import { filledValues, Pager, PerPage } from '../paging';
import { api, messageOf } from '../session';
import { Feedback, Field, usePoll } from '../ui';

type Customer = components['schemas']['Customer'];
type Page = { data: Customer[]; meta: components['schemas']['PageMeta'] };

/** GET /v1/customers with its filters, sort and paging. */
export function CustomersPage() {
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [page, setPage] = useState(1);
  const [shown, setShown] = useState<Page | null>(null);
  const [error, setError] = useState<string | null>(null);
  usePoll(
    async () => {
      const {
        data,
        error: refused,
        response,
      } = await api.GET('/v1/customers', {
        params: { query: { ...filters, page } as never },
      });
      if (!data) {
        setError(messageOf(refused, response.status));
        return;
      }
      setError(null);
      setShown(data as Page);
    },
    60_000,
    true,
    [JSON.stringify(filters), page],
  );
  return (
    <>
      <h1>Customers</h1>
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
        <Field label="Created from (yyyy-mm-dd)">
          <input name="created_from" placeholder="2024-01-31" />
        </Field>
        <Field label="Modified from (yyyy-mm-dd)">
          <input name="modified_from" placeholder="2024-01-31" />
        </Field>
        <Field label="Sort">
          <select name="sort" defaultValue="-created_at">
            <option value="-created_at">newest first</option>
            <option value="created_at">oldest first</option>
          </select>
        </Field>
        <PerPage sizes={[10, 25, 100, 500, 1000]} initial={100} />
        <div class="actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      <Feedback error={error} />
      {shown && (
        <>
          <Pager meta={shown.meta} page={page} onPage={setPage} />
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Code</th>
                  <th scope="col">Name</th>
                  <th scope="col">Contact</th>
                  <th scope="col">City</th>
                  <th scope="col">State</th>
                  <th scope="col">Created</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {shown.data.map((customer) => (
                  <tr key={customer.code}>
                    <td data-label="Code">{customer.code}</td>
                    <td data-label="Name">{customer.name}</td>
                    <td data-label="Contact">{customer.contact}</td>
                    <td data-label="City">{customer.city ?? ''}</td>
                    <td data-label="State">{String(customer.state ?? '')}</td>
                    <td data-label="Created">{customer.created_at}</td>
                    <td data-label="Updated">{customer.updated_at ?? ''}</td>
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
