// Charts of the last hour from the edge's in-memory ring: requests/s, latency and overhead percentiles, queue
// depth and in-flight. Plain SVG polylines: no chart library, nothing loaded from the network.
import type { UiChartPoint, UiCharts } from '../api.js';
import { clockTime } from '../format.js';

interface Series {
  name: string;
  className: string;
  values: (number | null)[];
}

const WIDTH = 600;
const HEIGHT = 140;

function Chart({
  title,
  unit,
  times,
  series,
}: {
  title: string;
  unit: string;
  times: number[];
  series: Series[];
}) {
  const all = series.flatMap((entry) => entry.values.filter((value): value is number => value !== null));
  const peak = Math.max(0, ...all);
  const max = peak > 0 ? peak : 1;
  const x = (index: number) => (times.length <= 1 ? 0 : (index / (times.length - 1)) * WIDTH);
  const y = (value: number) => HEIGHT - (value / max) * (HEIGHT - 10);
  const latest = series.map((entry) => {
    const last = [...entry.values].reverse().find((value) => value !== null);
    return `${entry.name} ${last === undefined || last === null ? '–' : `${round(last)} ${unit}`}`;
  });
  return (
    <figure class="chart">
      <figcaption>
        <strong>{title}</strong>{' '}
        <span class="muted">
          (peak {round(peak)} {unit}) · latest: {latest.join(' · ')}
        </span>
      </figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${title} over the last hour`}
      >
        <line x1="0" y1={HEIGHT - 0.5} x2={WIDTH} y2={HEIGHT - 0.5} class="axis" />
        {series.flatMap((entry) =>
          segments(entry.values).map((segment) =>
            segment.length === 1 ? (
              <circle
                key={`${entry.name}-${segment[0][0]}`}
                cx={x(segment[0][0]).toFixed(1)}
                cy={y(segment[0][1]).toFixed(1)}
                r="3"
                class={`dot ${entry.className}`}
              />
            ) : (
              <polyline
                key={`${entry.name}-${segment[0][0]}`}
                points={segment
                  .map(([index, value]) => `${x(index).toFixed(1)},${y(value).toFixed(1)}`)
                  .join(' ')}
                class={`line ${entry.className}`}
              />
            ),
          ),
        )}
      </svg>
      <div class="legend">
        <span class="muted">{clockTime(times[0])}</span>
        {series.map((entry) => (
          <span key={entry.name} class={`key ${entry.className}`}>
            {entry.name}
          </span>
        ))}
        <span class="muted">{clockTime(times[times.length - 1])}</span>
      </div>
    </figure>
  );
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Runs of consecutive non-null values as [index, value] pairs: a gap in the data is a gap in the line. */
function segments(values: (number | null)[]): [number, number][][] {
  const out: [number, number][][] = [];
  let current: [number, number][] = [];
  values.forEach((value, index) => {
    if (value === null) {
      if (current.length > 0) out.push(current);
      current = [];
    } else current.push([index, value]);
  });
  if (current.length > 0) out.push(current);
  return out;
}

export function ChartsView({ charts }: { charts: UiCharts | undefined }) {
  if (!charts) return <p class="muted">Loading…</p>;
  const points = charts.points;
  const pick = (field: keyof UiChartPoint) => points.map((point) => point[field]);
  const times = points.map((point) => point.t_ms);
  return (
    <section aria-labelledby="charts-title">
      <h2 id="charts-title">Last hour</h2>
      <p class="muted">Buckets of {charts.bucket_ms / 1000} s, kept in the edge's memory.</p>
      <div class="charts">
        <Chart
          title="Requests"
          unit="req/s"
          times={times}
          series={[{ name: 'finished', className: 's1', values: pick('requests_per_s') }]}
        />
        <Chart
          title="Latency"
          unit="ms"
          times={times}
          series={[
            { name: 'p50', className: 's1', values: pick('p50_ms') },
            { name: 'p99', className: 's2', values: pick('p99_ms') },
          ]}
        />
        <Chart
          title="Fabric overhead"
          unit="ms"
          times={times}
          series={[
            { name: 'p50', className: 's1', values: pick('overhead_p50_ms') },
            { name: 'p99', className: 's2', values: pick('overhead_p99_ms') },
          ]}
        />
        <Chart
          title="Queue and in flight"
          unit="runs"
          times={times}
          series={[
            { name: 'queued', className: 's2', values: pick('queued') },
            { name: 'in flight', className: 's1', values: pick('in_flight') },
          ]}
        />
      </div>
    </section>
  );
}
