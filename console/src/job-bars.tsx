import { FINISHED, type Job } from './jobs';
import { formatCount, Progress } from './ui';

/**
 * A job's progress: rows checked (every row is checked before any is written), then rows written, of
 * the rows received. While checking, how many rows the file holds is not known yet.
 */
export function JobBars({ job }: { job: Job }) {
  const { received, invalid, created, updated, ignored } = job.rows;
  const checking = job.state === 'validating';
  const notStarted = job.state === 'open' || job.state === 'queued';
  const checked = notStarted || (checking && received === 0);
  const written = created + updated + ignored;
  const toWrite =
    job.state === 'failed' && written === 0 ? 0 : received - (job.on_invalid === 'skip' ? invalid : 0);
  const writing = job.state === 'writing' || FINISHED.has(job.state);
  return (
    <div class="bars">
      {checked ? (
        <Progress
          label="Rows checked"
          now={undefined}
          max={0}
          text={notStarted ? 'not started' : 'starting'}
        />
      ) : checking ? (
        <Progress label="Rows checked" now={undefined} max={0} text={`${formatCount(received)} so far`} />
      ) : (
        <Progress
          label="Rows checked"
          now={received}
          max={received}
          text={`${formatCount(received)} of ${formatCount(received)}`}
        />
      )}
      {writing ? (
        <Progress
          label="Rows written"
          now={written}
          max={Math.max(toWrite, written)}
          text={`${formatCount(written)} of ${formatCount(Math.max(toWrite, written))}`}
        />
      ) : (
        <Progress label="Rows written" now={undefined} max={0} text="not started" />
      )}
    </div>
  );
}
