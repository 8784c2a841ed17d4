import { useState } from 'preact/hooks';
import { JobBars } from '../job-bars';
import { FINISHED, JOB_RESOURCES, type Job, jobList, PartFailed, planParts, sendPart } from '../jobs';
import { api, messageOf } from '../session';
import { Feedback, Field, formatCount, Progress, useAction, usePoll } from '../ui';

interface Upload {
  file: File;
  job: Job;
  /** Index of the next part to send. */
  next: number;
  sent: number;
  done: boolean;
}

const DELIMITERS: ReadonlyArray<[string, string]> = [
  [',', 'comma ,'],
  [';', 'semicolon ;'],
  ['\t', 'tab'],
  ['|', 'pipe |'],
];

/** Choose or drop a file, send it to a new job in parts, complete it. */
function UploadForm({ onQueued }: { onQueued: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [format, setFormat] = useState('csv');
  const [dragging, setDragging] = useState(false);
  const [upload, setUpload] = useState<Upload | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const abort = useAction();

  const choose = (chosen: File | null | undefined) => {
    setFile(chosen ?? null);
    if (chosen && /\.(ndjson|jsonl)$/i.test(chosen.name)) setFormat('ndjson');
    if (chosen && /\.csv$/i.test(chosen.name)) setFormat('csv');
  };

  /** Sends the parts from `state.next` on, then completes the job. */
  const send = async (state: Upload) => {
    setBusy(true);
    setError(null);
    const parts = planParts(state.file.size);
    const type = state.job.format === 'csv' ? 'text/csv' : 'application/x-ndjson';
    let current = state;
    try {
      for (let at = current.next; at < parts.length; at++) {
        const part = parts[at]!;
        await sendPart(current.job.id, current.file, part, type);
        current = { ...current, next: at + 1, sent: part.end };
        setUpload(current);
      }
      const {
        data,
        error: refused,
        response,
      } = await api.POST('/v1/jobs/{id}/complete', {
        params: { path: { id: current.job.id } },
      });
      if (!data) {
        setError(messageOf(refused, response.status));
        return;
      }
      setUpload({ ...current, job: data as Job, done: true });
      onQueued();
    } catch (thrown) {
      setError(
        thrown instanceof PartFailed
          ? `${thrown.message}. The parts before it are kept: resume to send the rest.`
          : `The upload stopped: ${(thrown as Error).message}. Resume to send the rest.`,
      );
    } finally {
      setBusy(false);
    }
  };

  const start = async (event: Event) => {
    event.preventDefault();
    if (!file) {
      setError('Choose a file first.');
      return;
    }
    const values = new FormData(event.currentTarget as HTMLFormElement);
    const body: Record<string, string> = {
      resource: String(values.get('resource')),
      format,
      on_invalid: String(values.get('on_invalid')),
    };
    if (format === 'csv') body.delimiter = String(values.get('delimiter'));
    setBusy(true);
    setError(null);
    setUpload(null);
    const {
      data,
      error: refused,
      response,
    } = await api.POST('/v1/jobs', { body: body as never }).catch((thrown: Error) => ({
      data: undefined,
      error: thrown.message,
      response: new Response(null, { status: 599 }),
    }));
    setBusy(false);
    if (!data) {
      setError(messageOf(refused, response.status));
      return;
    }
    const state: Upload = { file, job: data as Job, next: 0, sent: 0, done: false };
    setUpload(state);
    onQueued();
    await send(state);
  };

  const stopped = upload && !upload.done && !busy;
  return (
    <section aria-labelledby="upload-title" class="card">
      <h2 id="upload-title">Upload a file</h2>
      <form onSubmit={start}>
        <label
          class={dragging ? 'drop dragging' : 'drop'}
          onDragOver={(event) => {
            event.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(event) => {
            event.preventDefault();
            setDragging(false);
            choose(event.dataTransfer?.files[0]);
          }}
        >
          <span>File (choose, or drop it here)</span>
          <input
            type="file"
            name="file"
            accept=".csv,.ndjson,.jsonl,text/csv,application/x-ndjson"
            onChange={(event) => choose((event.currentTarget as HTMLInputElement).files?.[0])}
          />
          <span class="file-name">
            {file ? `${file.name} (${formatCount(file.size)} bytes)` : 'No file chosen'}
          </span>
        </label>
        <div class="row">
          <Field label="Resource">
            <select name="resource" defaultValue="prices">
              {JOB_RESOURCES.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Format">
            <select
              name="format"
              value={format}
              onChange={(event) => setFormat((event.currentTarget as HTMLSelectElement).value)}
            >
              <option value="csv">CSV</option>
              <option value="ndjson">NDJSON</option>
            </select>
          </Field>
          <Field label="Invalid rows">
            <select name="on_invalid" defaultValue="reject">
              <option value="reject">reject the file</option>
              <option value="skip">skip them</option>
            </select>
          </Field>
          {format === 'csv' && (
            <Field label="Delimiter">
              <select name="delimiter" defaultValue=",">
                {DELIMITERS.map(([value, label]) => (
                  <option key={label} value={value}>
                    {label}
                  </option>
                ))}
              </select>
            </Field>
          )}
        </div>
        <div class="actions">
          <button type="submit" disabled={busy}>
            Upload
          </button>
          {stopped && (
            <button type="button" onClick={() => send(upload)}>
              Resume upload
            </button>
          )}
          {stopped && (
            <button
              type="button"
              class="danger"
              disabled={abort.busy}
              onClick={() =>
                abort.run(
                  () => api.POST('/v1/jobs/{id}/abort', { params: { path: { id: upload.job.id } } }),
                  () => {
                    setUpload(null);
                    setError(null);
                    onQueued();
                    return 'Job aborted.';
                  },
                )
              }
            >
              Abort job
            </button>
          )}
        </div>
        <Feedback error={error ?? abort.error} note={abort.note} />
      </form>
      {upload && (
        <div class="upload-state">
          <Progress
            label="Bytes sent"
            now={upload.sent}
            max={upload.file.size}
            text={`${formatCount(upload.sent)} of ${formatCount(upload.file.size)}`}
          />
          <p role="status">
            {upload.done ? 'Sent: job ' : 'Sending to job '}
            <a href={`/console/jobs/${upload.job.id}`}>{upload.job.id}</a>
            {upload.done ? ` is ${upload.job.state}.` : '…'}
          </p>
        </div>
      )}
    </section>
  );
}

export function JobRow({ job }: { job: Job }) {
  return (
    <tr>
      <td data-label="Job">
        <a href={`/console/jobs/${job.id}`}>{job.id}</a>
      </td>
      <td data-label="Resource">{job.resource}</td>
      <td data-label="State">
        <span class={`state state-${job.state}`}>{job.state}</span>
        {job.error && <div class="small">{job.error}</div>}
      </td>
      <td data-label="Progress" class="progress-cell">
        <JobBars job={job} />
      </td>
      <td data-label="Created">{job.created_at}</td>
    </tr>
  );
}

export function JobsPage() {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const load = async () => {
    const { data, error: refused, response } = await jobList();
    if (!data) {
      setError(messageOf(refused, response.status));
      return;
    }
    setError(null);
    setJobs(data.data as Job[]);
  };
  const running = jobs === null || jobs.some((job) => !FINISHED.has(job.state));
  usePoll(load, running ? 1000 : 5000, true, [tick]);
  return (
    <>
      <h1>Jobs</h1>
      <UploadForm onQueued={() => setTick((n) => n + 1)} />
      <section aria-labelledby="jobs-title">
        <h2 id="jobs-title">Recent jobs</h2>
        <Feedback error={error} />
        {jobs && jobs.length === 0 && <p>No job yet.</p>}
        {jobs && jobs.length > 0 && (
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">Resource</th>
                  <th scope="col">State</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {jobs.map((job) => (
                  <JobRow key={job.id} job={job} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
