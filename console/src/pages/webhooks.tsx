import { useState } from 'preact/hooks';
import type { components } from '../../generated/api';
import { JOB_RESOURCES } from '../jobs';
import { api, messageOf } from '../session';
import { Feedback, Field, formatCount, useAction, usePoll } from '../ui';

type Endpoint = components['schemas']['WebhookEndpoint'];
type Attempt = components['schemas']['WebhookDeliveryAttempt'];
type Resource = (typeof JOB_RESOURCES)[number];

/** The change feed's resources an endpoint may choose (extensions.md 10 and 11). */
const FEED_RESOURCES = JOB_RESOURCES;
/** Records counted per resource waiting; more shows as "1,000+". */
const WAITING_COUNTED = 1000;

/** Records of the feed after the endpoint's position: what waits for it, counted up to a page. */
async function waitingOf(endpoint: Endpoint): Promise<Record<string, string>> {
  const counts: Record<string, string> = {};
  const positions = (endpoint.positions ?? {}) as Record<string, string>;
  await Promise.all(
    endpoint.resources.map(async (resource) => {
      const after = positions[resource];
      const { data } = await api.GET('/v1/changes', {
        params: {
          query: { resource: resource as Resource, limit: WAITING_COUNTED, ...(after ? { after } : {}) },
        },
      });
      if (data) counts[resource] = `${formatCount(data.data.length)}${data.hasMore ? '+' : ''}`;
    }),
  );
  return counts;
}

function ResourcePicker({ chosen, name }: { chosen: readonly string[]; name: string }) {
  return (
    <fieldset class="resources">
      <legend>Resources</legend>
      {FEED_RESOURCES.map((resource) => (
        <label key={resource} class="check">
          <input type="checkbox" name={name} value={resource} defaultChecked={chosen.includes(resource)} />
          {resource}
        </label>
      ))}
    </fieldset>
  );
}

function CreateForm({ onCreated }: { onCreated: () => void }) {
  const action = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const values = new FormData(form);
    const body: Record<string, unknown> = {
      url: String(values.get('url') ?? ''),
      resources: values.getAll('resources').map(String),
      from: String(values.get('from')),
    };
    const batch = String(values.get('batch_size') ?? '');
    if (batch !== '') body.batch_size = Number(batch);
    const description = String(values.get('description') ?? '');
    if (description !== '') body.description = description;
    setCopied(null);
    void action.run(
      () => api.POST('/v1/webhooks', { body: body as never }),
      (created) => {
        setSecret((created as { secret: string }).secret);
        form.reset();
        onCreated();
        return `Endpoint ${(created as { id: string }).id} created.`;
      },
    );
  };
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret ?? '');
      setCopied('Copied.');
    } catch {
      setCopied('The browser refused the clipboard: select the secret and copy it.');
    }
  };
  return (
    <section aria-labelledby="create-title" class="card">
      <h2 id="create-title">Add an endpoint</h2>
      <form onSubmit={submit}>
        <Field label="URL" wide>
          <input name="url" type="url" required placeholder="https://erp.example.com/hooks/sfa" />
        </Field>
        <ResourcePicker chosen={['customers']} name="resources" />
        <div class="row">
          <Field label="Start from">
            <select name="from" defaultValue="now">
              <option value="now">changes from now on</option>
              <option value="start">the whole feed first</option>
            </select>
          </Field>
          <Field label="Records per delivery">
            <input name="batch_size" type="number" min={1} max={1000} placeholder="100" />
          </Field>
          <Field label="Description" wide>
            <input name="description" maxLength={200} />
          </Field>
        </div>
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            Add endpoint
          </button>
        </div>
        <Feedback error={action.error} note={action.note} />
      </form>
      {secret && (
        <section class="secret" aria-label="New secret">
          <Field label="Signing secret (shown once: keep it now)" wide>
            <input
              readOnly
              value={secret}
              onFocus={(event) => (event.currentTarget as HTMLInputElement).select()}
            />
          </Field>
          <div class="actions">
            <button type="button" onClick={copy}>
              Copy secret
            </button>
            <button type="button" class="secondary" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
          {copied && <p role="status">{copied}</p>}
        </section>
      )}
    </section>
  );
}

function Attempts({ id }: { id: string }) {
  const [attempts, setAttempts] = useState<Attempt[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  usePoll(
    async () => {
      const {
        data,
        error: refused,
        response,
      } = await api.GET('/v1/webhooks/{id}/deliveries', {
        params: { path: { id }, query: { limit: 20 } },
      });
      if (!data) setError(messageOf(refused, response.status));
      else setAttempts(data.data as Attempt[]);
    },
    3000,
    true,
    [id],
  );
  return (
    <div class="attempts">
      <h4>Latest attempts</h4>
      <Feedback error={error} />
      {attempts && attempts.length === 0 && <p>No attempt yet.</p>}
      {attempts && attempts.length > 0 && (
        <div class="table-wrap">
          <table class="stack">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Resource</th>
                <th scope="col">Records</th>
                <th scope="col">Attempt</th>
                <th scope="col">Status</th>
                <th scope="col">Error</th>
                <th scope="col">ms</th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((attempt) => (
                <tr key={`${attempt.id}-${attempt.attempt}`}>
                  <td data-label="When">{attempt.attemptedAt}</td>
                  <td data-label="Resource">{attempt.resource}</td>
                  <td data-label="Records">{attempt.records}</td>
                  <td data-label="Attempt">{attempt.attempt}</td>
                  <td data-label="Status">{attempt.statusCode ?? '—'}</td>
                  <td data-label="Error">{attempt.error ?? '—'}</td>
                  <td data-label="ms">{attempt.durationMs}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function EditForm({ endpoint, onDone }: { endpoint: Endpoint; onDone: () => void }) {
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    const values = new FormData(event.currentTarget as HTMLFormElement);
    const body = {
      url: String(values.get('url')),
      resources: values.getAll(`resources-${endpoint.id}`).map(String),
      description: String(values.get('description') ?? ''),
      batch_size: Number(values.get('batch_size')),
    };
    void action.run(
      () => api.PATCH('/v1/webhooks/{id}', { params: { path: { id: endpoint.id } }, body: body as never }),
      () => {
        onDone();
        return undefined;
      },
    );
  };
  return (
    <form onSubmit={submit} class="edit">
      <Field label="URL" wide>
        <input name="url" type="url" required defaultValue={endpoint.url} />
      </Field>
      <ResourcePicker chosen={endpoint.resources} name={`resources-${endpoint.id}`} />
      <div class="row">
        <Field label="Records per delivery">
          <input
            name="batch_size"
            type="number"
            min={1}
            max={1000}
            defaultValue={String(endpoint.batch_size)}
          />
        </Field>
        <Field label="Description" wide>
          <input name="description" maxLength={200} defaultValue={endpoint.description ?? ''} />
        </Field>
      </div>
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          Save
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
      <Feedback error={action.error} />
    </form>
  );
}

function ReplayForm({ endpoint, onDone }: { endpoint: Endpoint; onDone: (note: string) => void }) {
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    const values = new FormData(event.currentTarget as HTMLFormElement);
    const after = String(values.get('after') ?? '').trim();
    const body = { resource: String(values.get('resource')), ...(after ? { after } : {}) };
    void action.run(
      () =>
        api.POST('/v1/webhooks/{id}/replay', { params: { path: { id: endpoint.id } }, body: body as never }),
      () => {
        onDone(`Replay of ${body.resource} scheduled.`);
        return undefined;
      },
    );
  };
  return (
    <form onSubmit={submit} class="edit">
      <div class="row">
        <Field label="Replay resource">
          <select name="resource">
            {endpoint.resources.map((resource) => (
              <option key={resource} value={resource}>
                {resource}
              </option>
            ))}
          </select>
        </Field>
        <Field label="After cursor (empty: from the start)" wide>
          <input name="after" spellcheck={false} />
        </Field>
      </div>
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          Replay
        </button>
      </div>
      <Feedback error={action.error} />
    </form>
  );
}

function EndpointCard({ endpoint, reload }: { endpoint: Endpoint; reload: () => void }) {
  const action = useAction();
  const [open, setOpen] = useState<'edit' | 'replay' | 'attempts' | 'delete' | null>(null);
  const [waiting, setWaiting] = useState<Record<string, string>>({});
  const [secret, setSecret] = useState<string | null>(null);
  usePoll(async () => setWaiting(await waitingOf(endpoint)), 5000, true, [
    endpoint.id,
    JSON.stringify(endpoint.positions),
  ]);
  const path = { params: { path: { id: endpoint.id } } };
  const toggle = (panel: typeof open) => setOpen(open === panel ? null : panel);
  // An active endpoint can be paused; any other (paused, disabled) made active again.
  const toggled =
    endpoint.status === 'active'
      ? { status: 'paused', label: 'Pause', done: 'Paused.' }
      : { status: 'active', label: 'Resume', done: 'Resumed.' };
  const title = `endpoint-${endpoint.id}`;
  return (
    <article class="card endpoint" aria-labelledby={title}>
      <h3 id={title}>{endpoint.url}</h3>
      <dl class="facts">
        <dt>Id</dt>
        <dd>{endpoint.id}</dd>
        <dt>Status</dt>
        <dd>
          <span class={`state state-${endpoint.status}`}>{endpoint.status}</span>
        </dd>
        <dt>Failing since</dt>
        <dd>{endpoint.failing_since ?? '—'}</dd>
        <dt>Disabled because</dt>
        <dd>{endpoint.disabled_reason ?? '—'}</dd>
        <dt>Description</dt>
        <dd>{endpoint.description || '—'}</dd>
        <dt>Records per delivery</dt>
        <dd>{endpoint.batch_size}</dd>
        <dt>Waiting</dt>
        <dd>
          <ul class="inline">
            {endpoint.resources.map((resource) => (
              <li key={resource}>
                {resource}: {waiting[resource] ?? '…'}
              </li>
            ))}
          </ul>
        </dd>
      </dl>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          aria-expanded={open === 'edit'}
          onClick={() => toggle('edit')}
        >
          Edit
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() =>
            action.run(
              () => api.PATCH('/v1/webhooks/{id}', { ...path, body: { status: toggled.status } as never }),
              () => {
                reload();
                return toggled.done;
              },
            )
          }
        >
          {toggled.label}
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() =>
            action.run(
              () => api.POST('/v1/webhooks/{id}/ping', path),
              (data) => {
                const ping = data as { statusCode: number | null; error: string | null; durationMs: number };
                return `Ping: ${ping.statusCode ?? 'no answer'}${ping.error ? ` (${ping.error})` : ''} in ${ping.durationMs} ms.`;
              },
            )
          }
        >
          Ping
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() =>
            action.run(
              () => api.POST('/v1/webhooks/{id}/retry', path),
              () => {
                reload();
                return 'Retry scheduled: waiting deliveries are attempted now.';
              },
            )
          }
        >
          Retry now
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() =>
            action.run(
              () => api.POST('/v1/webhooks/{id}/rotate-secret', path),
              (data) => {
                setSecret((data as { secret: string }).secret);
                return 'Secret rotated: the old one also signs for 24 hours.';
              },
            )
          }
        >
          Rotate secret
        </button>
        <button
          type="button"
          class="secondary"
          aria-expanded={open === 'replay'}
          onClick={() => toggle('replay')}
        >
          Replay
        </button>
        <button
          type="button"
          class="secondary"
          aria-expanded={open === 'attempts'}
          onClick={() => toggle('attempts')}
        >
          Attempts
        </button>
        <button
          type="button"
          class="danger"
          aria-expanded={open === 'delete'}
          onClick={() => toggle('delete')}
        >
          Delete
        </button>
      </div>
      <Feedback error={action.error} note={action.note} />
      {secret && (
        <section class="secret" aria-label="New secret">
          <Field label="New signing secret (shown once)" wide>
            <input readOnly value={secret} />
          </Field>
          <div class="actions">
            <button type="button" onClick={() => void navigator.clipboard.writeText(secret).catch(() => {})}>
              Copy secret
            </button>
            <button type="button" class="secondary" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </section>
      )}
      {open === 'edit' && (
        <EditForm
          endpoint={endpoint}
          onDone={() => {
            setOpen(null);
            reload();
          }}
        />
      )}
      {open === 'replay' && (
        <ReplayForm
          endpoint={endpoint}
          onDone={(note) => {
            setOpen(null);
            action.setNote(note);
            reload();
          }}
        />
      )}
      {open === 'attempts' && <Attempts id={endpoint.id} />}
      {open === 'delete' && (
        <div class="actions">
          <span>Delete this endpoint? Its deliveries stop.</span>
          <button
            type="button"
            class="danger"
            onClick={() =>
              action.run(
                () => api.DELETE('/v1/webhooks/{id}', path),
                () => {
                  reload();
                  return undefined;
                },
              )
            }
          >
            Confirm delete
          </button>
        </div>
      )}
    </article>
  );
}

export function WebhooksPage() {
  const [endpoints, setEndpoints] = useState<Endpoint[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  usePoll(
    async () => {
      const { data, error: refused, response } = await api.GET('/v1/webhooks');
      if (!data) setError(messageOf(refused, response.status));
      else {
        setError(null);
        setEndpoints(data.data as Endpoint[]);
      }
    },
    5000,
    true,
    [tick],
  );
  const reload = () => setTick((n) => n + 1);
  return (
    <>
      <h1>Webhooks</h1>
      <CreateForm onCreated={reload} />
      <section aria-labelledby="endpoints-title">
        <h2 id="endpoints-title">Endpoints</h2>
        <Feedback error={error} />
        {endpoints && endpoints.length === 0 && <p>No endpoint yet.</p>}
        {endpoints?.map((endpoint) => (
          <EndpointCard key={endpoint.id} endpoint={endpoint} reload={reload} />
        ))}
      </section>
    </>
  );
}
