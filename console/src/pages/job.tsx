import { useState } from 'preact/hooks';
import { JobBars } from '../job-bars';
import { FINISHED, firstProblems, type Job, OUTCOMES, rowsOf } from '../jobs';
import { api, apiFetch, messageOf } from '../session';
import { Feedback, formatCount, saveFile, useAction, usePoll } from '../ui';

/** How many of a failed job's invalid rows the page lists; the rest are in the download. */
const PROBLEMS_SHOWN = 10;

function Downloads({ job }: { job: Job }) {
  const [error, setError] = useState<string | null>(null);
  const download = async (outcome: string) => {
    setError(null);
    try {
      const response = await apiFetch(`/v1/jobs/${encodeURIComponent(job.id)}/results?outcome=${outcome}`);
      if (!response.ok) {
        setError(messageOf(await response.json().catch(() => undefined), response.status));
        return;
      }
      saveFile(await response.blob(), `${job.id}-${outcome}.ndjson`);
    } catch (thrown) {
      setError(`The request did not reach the service: ${(thrown as Error).message}`);
    }
  };
  return (
    <section aria-labelledby="results-title">
      <h2 id="results-title">Results</h2>
      <div class="actions">
        {OUTCOMES.map((outcome) => (
          <button key={outcome} type="button" class="secondary" onClick={() => download(outcome)}>
            Download {outcome} rows ({formatCount(rowsOf(job, outcome))})
          </button>
        ))}
      </div>
      <Feedback error={error} />
    </section>
  );
}

export function JobPage({ id }: { id: string }) {
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [problems, setProblems] = useState<string[] | null>(null);
  const abort = useAction();
  const finished = job !== null && FINISHED.has(job.state);
  usePoll(
    async () => {
      const { data, error: refused, response } = await api.GET('/v1/jobs/{id}', { params: { path: { id } } });
      if (!data) {
        setError(messageOf(refused, response.status));
        return;
      }
      const shown = data as Job;
      setJob(shown);
      if (FINISHED.has(shown.state) && shown.rows.invalid > 0 && problems === null) {
        setProblems(await firstProblems(id, PROBLEMS_SHOWN));
      }
    },
    1000,
    !finished,
    [id],
  );
  return (
    <>
      <p>
        <a href="/console/jobs">← Jobs</a>
      </p>
      <h1>Job {id}</h1>
      <Feedback error={error} />
      {job && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <span class={`state state-${job.state}`}>{job.state}</span>
            </dd>
            <dt>Resource</dt>
            <dd>{job.resource}</dd>
            <dt>Format</dt>
            <dd>{job.format}</dd>
            <dt>Invalid rows</dt>
            <dd>{job.on_invalid === 'skip' ? 'skipped' : 'reject the file'}</dd>
            <dt>Rows</dt>
            <dd>
              {formatCount(job.rows.received)} received, {formatCount(job.rows.invalid)} invalid,{' '}
              {formatCount(job.rows.created)} created, {formatCount(job.rows.updated)} updated,{' '}
              {formatCount(job.rows.ignored)} ignored
            </dd>
            <dt>Parts</dt>
            <dd>
              {formatCount(job.parts.count)} ({formatCount(job.parts.bytes)} bytes)
            </dd>
            <dt>Created</dt>
            <dd>{job.created_at}</dd>
            <dt>Finished</dt>
            <dd>{job.finished_at ?? '—'}</dd>
          </dl>
          {job.error && (
            <p class="error-box" role="alert">
              {job.error}
            </p>
          )}
          <JobBars job={job} />
          {(job.state === 'open' || job.state === 'queued') && (
            <div class="actions">
              <button
                type="button"
                class="danger"
                disabled={abort.busy}
                onClick={() =>
                  abort.run(
                    () => api.POST('/v1/jobs/{id}/abort', { params: { path: { id } } }),
                    (data) => {
                      setJob(data as Job);
                      return 'Job aborted.';
                    },
                  )
                }
              >
                Abort job
              </button>
              <Feedback error={abort.error} note={abort.note} />
            </div>
          )}
          {problems && problems.length > 0 && (
            <section aria-labelledby="problems-title">
              <h2 id="problems-title">First problems</h2>
              <ul class="problems">
                {problems.map((problem) => (
                  <li key={problem}>{problem}</li>
                ))}
              </ul>
            </section>
          )}
          {finished && <Downloads job={job} />}
        </>
      )}
    </>
  );
}
