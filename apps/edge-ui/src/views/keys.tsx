// Keys: each API key's recorded usage over a chosen period (runs, of them agents' model calls, tokens in/out,
// last use), its limits, and what is left of its token budget in the current window — the figures of
// `iop-edge usage --by key`, an agent's model calls charged to the key that started the agent.
import { useEffect, useState } from 'preact/hooks';
import { api, type UiKey, type UiKeys } from '../api.js';
import { age, budgetLeft, budgetUsedShare, count, keyLimits, keyName } from '../format.js';

const PERIODS = [
  ['1h', 'last hour'],
  ['24h', 'last 24 h'],
  ['7d', 'last 7 days'],
  ['30d', 'last 30 days'],
  ['all', 'all kept'],
] as const;

function BudgetCell({ keyRow }: { keyRow: UiKey }) {
  const budget = keyRow.budget;
  if (!budget) return <span class="muted">no budget</span>;
  const used = budgetUsedShare(budget) * 100;
  return (
    <div class="barcell">
      <div
        class="bar"
        role="meter"
        aria-valuemin={0}
        aria-valuemax={budget.tokens}
        aria-valuenow={Math.min(budget.used, budget.tokens)}
        aria-label={`${keyName(keyRow)} budget used`}
      >
        <div class={used >= 100 ? 'fill full' : 'fill'} style={{ width: `${used}%` }} />
      </div>
      <span>{budgetLeft(budget)}</span>
    </div>
  );
}

export function KeysView() {
  const [since, setSince] = useState('24h');
  const [view, setView] = useState<UiKeys | undefined>();
  const [error, setError] = useState('');
  const load = () => {
    api
      .keys(since)
      .then((answer) => {
        setView(answer);
        setError('');
      })
      .catch((failure: unknown) => setError(String(failure)));
  };
  useEffect(load, [since]);
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <label>
        Usage over{' '}
        <select value={since} onChange={(event) => setSince(event.currentTarget.value)}>
          {PERIODS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>{' '}
      <button type="button" onClick={load}>
        Refresh
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {view === undefined ? (
        <p class="muted">Loading…</p>
      ) : view.keys.length === 0 ? (
        <p class="muted">No API keys are configured and no usage is recorded.</p>
      ) : (
        <div class="scroll">
          <table data-testid="keys">
            <thead>
              <tr>
                <th>Key</th>
                <th>Runs</th>
                <th>Agent model calls</th>
                <th>Tokens in</th>
                <th>Tokens out</th>
                <th>Errors / rejected</th>
                <th>Budget</th>
                <th>Limits</th>
                <th>Now</th>
                <th>Last used</th>
              </tr>
            </thead>
            <tbody>
              {view.keys.map((key) => (
                <tr key={key.id} data-key={key.id}>
                  <td>
                    <code>{keyName(key)}</code>
                    {!key.configured && <span class="muted"> (not configured)</span>}
                    {key.models.length > 0 && <div class="muted">{key.models.join(', ')}</div>}
                  </td>
                  <td>{key.runs.toLocaleString()}</td>
                  <td>{key.child_runs.toLocaleString()}</td>
                  <td>{key.input_tokens.toLocaleString()}</td>
                  <td>{key.output_tokens.toLocaleString()}</td>
                  <td>
                    {key.outcomes.error} / {key.outcomes.rejected}
                  </td>
                  <td>
                    <BudgetCell keyRow={key} />
                  </td>
                  <td>{key.configured ? keyLimits(key) : '–'}</td>
                  <td>
                    {key.live
                      ? `${count(key.live.in_flight, 'in flight')} · ${count(key.live.requests_last_minute, 'req/min')}`
                      : '–'}
                  </td>
                  <td>{key.last_used_ms === null ? '–' : age(view.now_ms, key.last_used_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
