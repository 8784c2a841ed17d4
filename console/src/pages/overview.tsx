import { Fragment } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { components } from '../../generated/api';
import { HourlyChart, writingResources } from '../hourly-chart';
import { api, messageOf } from '../session';
import { Feedback, formatCount, usePoll } from '../ui';

type Overview = components['schemas']['Overview'];

const sum = (counts: readonly number[]) => counts.reduce((total, n) => total + n, 0);

function Counts({ title, values }: { title: string; values: Readonly<Record<string, number>> }) {
  return (
    <section class="card count-card" aria-label={title}>
      <h2>{title}</h2>
      <dl class="facts">
        {Object.entries(values).map(([name, n]) => (
          <Fragment key={name}>
            <dt>{name.replaceAll('_', ' ')}</dt>
            <dd>{formatCount(n)}</dd>
          </Fragment>
        ))}
      </dl>
    </section>
  );
}

/** The tenant at a glance (GET /v1/overview): counts, and records written per hour over 7 days. */
export function OverviewPage() {
  const [overview, setOverview] = useState<Overview | null>(null);
  const [error, setError] = useState<string | null>(null);
  usePoll(async () => {
    const { data, error: refused, response } = await api.GET('/v1/overview');
    if (!data) {
      setError(messageOf(refused, response.status));
      return;
    }
    setError(null);
    setOverview(data);
  }, 30_000);
  const series = overview?.written_per_hour;
  // Keyed by the figures, not the object: the chart is drawn again only when they changed.
  const seriesKey = JSON.stringify(series ?? null);
  const stableSeries = useMemo(() => series, [seriesKey]);
  const weekTotals = stableSeries
    ? Object.entries(stableSeries.resources).map(([name, counts]) => ({
        name,
        week: sum(counts),
        lastHour: counts[counts.length - 1] ?? 0,
      }))
    : [];
  const weekTotal = weekTotals.reduce((total, r) => total + r.week, 0);
  return (
    <>
      <h1>Overview</h1>
      <Feedback error={error} />
      {overview && stableSeries && (
        <>
          <div class="count-cards">
            <Counts title="Rows" values={overview.rows} />
            <Counts title="Deliveries not acknowledged" values={overview.deliveries} />
            <Counts title="Bulk jobs" values={overview.jobs} />
            <Counts title="Webhook endpoints" values={overview.webhooks} />
          </div>
          <section class="card" aria-labelledby="written-title">
            <h2 id="written-title">Records written per hour, last 7 days (UTC)</h2>
            <HourlyChart
              series={stableSeries}
              label={`Records written per hour over the last 7 days: ${formatCount(weekTotal)} in all${
                writingResources(stableSeries).length === 0 ? ', none' : ''
              }`}
            />
            <div class="table-wrap">
              <table class="stack">
                <thead>
                  <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Written, last 7 days</th>
                    <th scope="col">Written, this hour</th>
                  </tr>
                </thead>
                <tbody>
                  {weekTotals.map((r) => (
                    <tr key={r.name}>
                      <td data-label="Resource">{r.name}</td>
                      <td data-label="Last 7 days">{formatCount(r.week)}</td>
                      <td data-label="This hour">{formatCount(r.lastHour)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        </>
      )}
    </>
  );
}
