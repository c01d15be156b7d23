// Runs: the latest runs across the fabric, live from the feed, filterable by status and text; a run opens into
// its event timeline and answer text. An agent run's model calls (child runs, `parent_run_id`) are listed under it,
// indented, and the agent run's row counts them.
import { useEffect, useState } from 'preact/hooks';
import { api, type UiRun, type UiRunDetail } from '../api.js';
import { clockTime, count, duration } from '../format.js';

const STATUSES = ['', 'running', 'completed', 'error', 'cancelled'] as const;

export function RunsView({ runs }: { runs: UiRun[] }) {
  const [status, setStatus] = useState('');
  const [text, setText] = useState('');
  const [open, setOpen] = useState<string | undefined>();
  const needle = text.trim().toLowerCase();
  const shown = nestChildren(
    runs.filter(
      (run) =>
        (!status || run.status === status) &&
        (!needle ||
          [run.run_id, run.model, run.provider, run.node_id, run.target, run.surface]
            .join(' ')
            .toLowerCase()
            .includes(needle)),
    ),
  );
  const childCount = new Map<string, number>();
  for (const run of shown) {
    if (run.parent_run_id) childCount.set(run.parent_run_id, (childCount.get(run.parent_run_id) ?? 0) + 1);
  }
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <div class="filters">
        <label>
          Status{' '}
          <select value={status} onChange={(event) => setStatus(event.currentTarget.value)}>
            {STATUSES.map((value) => (
              <option key={value} value={value}>
                {value || 'any'}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search{' '}
          <input
            type="search"
            placeholder="run, model, provider, node"
            value={text}
            onInput={(event) => setText(event.currentTarget.value)}
          />
        </label>
        <span class="muted">{shown.length} shown</span>
      </div>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Started</th>
              <th>Run</th>
              <th>Surface</th>
              <th>Model</th>
              <th>Provider</th>
              <th>Node</th>
              <th>Status</th>
              <th>Queue</th>
              <th>Duration</th>
              <th>Tokens</th>
              <th>Overhead</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((run) => (
              <tr
                key={run.run_id}
                data-run={run.run_id}
                data-status={run.status}
                data-parent={run.parent_run_id}
                class={run.parent_run_id ? 'child-run' : undefined}
              >
                <td>{clockTime(run.started_ms)}</td>
                <td>
                  <button
                    type="button"
                    class="link"
                    aria-expanded={open === run.run_id}
                    onClick={() => setOpen(open === run.run_id ? undefined : run.run_id)}
                  >
                    {run.parent_run_id ? '↳ ' : ''}
                    {run.run_id.slice(0, 12)}
                  </button>
                  {childCount.has(run.run_id) && (
                    <span class="muted"> {count(childCount.get(run.run_id) ?? 0, 'calls')}</span>
                  )}
                </td>
                <td>{run.surface || '–'}</td>
                <td>{run.model || run.target || '–'}</td>
                <td>{run.provider || '–'}</td>
                <td>{run.node_id}</td>
                <td>
                  <span class={`badge ${run.status}`} title={run.error}>
                    {run.status}
                  </span>
                </td>
                <td class="num">{duration(run.queue_ms)}</td>
                <td class="num">{duration(run.duration_ms)}</td>
                <td class="num">
                  {run.completion_tokens === null ? '–' : count(run.completion_tokens, 'tok')}
                </td>
                <td class="num">{duration(run.overhead_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open && (
        <RunDetail
          runId={open}
          onClose={() => setOpen(undefined)}
          version={runs.find((run) => run.run_id === open)}
        />
      )}
    </section>
  );
}

function RunDetail({ runId, onClose, version }: { runId: string; onClose: () => void; version?: UiRun }) {
  const [detail, setDetail] = useState<UiRunDetail | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    api
      .run(runId)
      .then(setDetail)
      .catch((failure: unknown) => setError(String(failure)));
  }, [runId, version?.status]);
  return (
    <section class="panel" aria-label={`Run ${runId}`}>
      <header class="panel-head">
        <h3>Run {runId}</h3>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      {error && <p class="error">{error}</p>}
      {detail && (
        <>
          <p>
            {detail.run.model || detail.run.target} on {detail.run.provider || detail.run.adapter} (
            {detail.run.node_id}) · <span class={`badge ${detail.run.status}`}>{detail.run.status}</span>{' '}
            {detail.run.error}
          </p>
          <h4>Text</h4>
          <pre class="answer" data-testid="run-text">
            {detail.text || '(no text)'}
            {detail.text_truncated ? '\n… (truncated)' : ''}
          </pre>
          <h4>Timeline</h4>
          <ol class="timeline">
            {detail.events.map((event) => (
              <li key={event.seq}>
                <span class="muted">{clockTime(event.at_ms)}</span> <code>{event.type}</code> {event.summary}
              </li>
            ))}
          </ol>
          {detail.events_dropped > 0 && <p class="muted">{detail.events_dropped} more events not kept.</p>}
        </>
      )}
    </section>
  );
}

/** Each child run right after its agent run (newest first among them); a child whose agent run is not shown stays in place. */
function nestChildren(runs: UiRun[]): UiRun[] {
  const ids = new Set(runs.map((run) => run.run_id));
  const children = new Map<string, UiRun[]>();
  for (const run of runs) {
    const parent = run.parent_run_id;
    if (parent && ids.has(parent)) children.set(parent, [...(children.get(parent) ?? []), run]);
  }
  if (children.size === 0) return runs;
  const nested: UiRun[] = [];
  for (const run of runs) {
    if (run.parent_run_id && ids.has(run.parent_run_id)) continue;
    nested.push(run, ...(children.get(run.run_id) ?? []));
  }
  return nested;
}
