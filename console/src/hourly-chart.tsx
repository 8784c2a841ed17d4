import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Records written per UTC hour, one series per resource (GET /v1/overview's written_per_hour). */
export interface HourlySeries {
  /** UTC hours as the API gives them (`2026-11-20T04:00:00`), oldest first. */
  hours: readonly string[];
  /** Per resource, one count per hour. */
  resources: Readonly<Record<string, readonly number[]>>;
}

// Distinguishable on white and for the common colour-vision deficiencies (Okabe-Ito, then two more).
const COLOURS = [
  '#0072b2',
  '#e69f00',
  '#009e73',
  '#cc79a7',
  '#56b4e9',
  '#d55e00',
  '#000000',
  '#7f7f00',
  '#8c564b',
];

const HEIGHT = 260;

/** The resources that wrote anything in the series, in the API's order. */
export function writingResources(series: HourlySeries): string[] {
  return Object.entries(series.resources)
    .filter(([, counts]) => counts.some((n) => n > 0))
    .map(([name]) => name);
}

/**
 * The chart, drawn by uPlot on a canvas that follows its container's width. uPlot styles its elements
 * through the DOM's style properties, which the console's policy (no inline style attributes) allows.
 * Screen readers get the chart's label; the page shows the same figures as a table.
 */
export function HourlyChart({ series, label }: { series: HourlySeries; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const shown = writingResources(series);
    const names = shown.length > 0 ? shown : Object.keys(series.resources).slice(0, 1);
    const data: uPlot.AlignedData = [
      series.hours.map((hour) => Date.parse(`${hour}Z`) / 1000),
      ...names.map((name) => [...(series.resources[name] ?? [])]),
    ];
    const chart = new uPlot(
      {
        width: Math.max(200, element.clientWidth),
        height: HEIGHT,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        series: [
          { label: 'Hour (UTC)' },
          ...names.map((name, i) => ({
            label: name,
            stroke: COLOURS[i % COLOURS.length],
            width: 2,
            value: (_u: uPlot, v: number | null) => (v === null ? '' : v.toLocaleString('en')),
          })),
        ],
        axes: [{}, { values: (_u, ticks) => ticks.map((t) => t.toLocaleString('en')), size: 70 }],
      },
      data,
      element,
    );
    const resized = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(200, element.clientWidth), height: HEIGHT }),
    );
    resized.observe(element);
    return () => {
      resized.disconnect();
      chart.destroy();
    };
  }, [series]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
