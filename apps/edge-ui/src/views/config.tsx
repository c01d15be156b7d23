// Config: the effective config (secrets redacted), and a candidate edge.yaml (pasted or uploaded) → dry-run shows
// its classification with paths → apply, through the edge's config refresh (the path `iop-edge config refresh`
// takes). Apply is offered only for the exact text whose dry-run came back `applied`.
import { useEffect, useState } from 'preact/hooks';
import { api, type UiRefreshResult } from '../api.js';

export function ConfigView() {
  const [effective, setEffective] = useState('');
  const [candidate, setCandidate] = useState('');
  const [result, setResult] = useState<UiRefreshResult | undefined>();
  const [checked, setChecked] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  const loadEffective = () => {
    api
      .config()
      .then((answer) => setEffective(JSON.stringify(answer.config, null, 2)))
      .catch((failure: unknown) => setError(String(failure)));
  };
  useEffect(loadEffective, []);

  const submit = (mode: 'dry-run' | 'apply') => {
    setBusy(true);
    setError('');
    const text = candidate;
    api
      .refresh(mode, text)
      .then((answer) => {
        setResult(answer);
        setChecked(mode === 'dry-run' && answer.status === 'applied' ? text : undefined);
        if (mode === 'apply') loadEffective();
      })
      .catch((failure: unknown) => setError(String(failure)))
      .finally(() => setBusy(false));
  };

  return (
    <section aria-labelledby="config-title">
      <h2 id="config-title">Config</h2>
      <div class="two">
        <div>
          <h3>Candidate edge.yaml</h3>
          <label for="candidate">Paste a candidate, or load a file:</label>{' '}
          <input
            type="file"
            accept=".yaml,.yml,.json,text/yaml"
            aria-label="Load a candidate file"
            onChange={(event) => {
              const file = event.currentTarget.files?.[0];
              if (file) void file.text().then(setCandidate);
            }}
          />
          <textarea
            id="candidate"
            rows={18}
            spellcheck={false}
            value={candidate}
            onInput={(event) => setCandidate(event.currentTarget.value)}
          />
          <div class="actions">
            <button type="button" disabled={busy || !candidate} onClick={() => submit('dry-run')}>
              Dry run
            </button>
            <button
              type="button"
              class="primary"
              disabled={busy || checked === undefined || checked !== candidate}
              onClick={() => submit('apply')}
            >
              Apply
            </button>
          </div>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          {result && <RefreshResultView result={result} />}
        </div>
        <div>
          <h3>Effective config (secrets redacted)</h3>
          <pre class="config">{effective}</pre>
        </div>
      </div>
    </section>
  );
}

function RefreshResultView({ result }: { result: UiRefreshResult }) {
  return (
    <div class="result" data-testid="refresh-result" data-status={result.status} data-mode={result.mode}>
      <p>
        {result.mode}: <span class={`badge ${result.status}`}>{result.status}</span>
      </p>
      {result.reports.length === 0 ? (
        <p class="muted">No change.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Path</th>
              <th>Change</th>
              <th>Class</th>
              <th>Reason</th>
            </tr>
          </thead>
          <tbody>
            {result.reports.map((report) => (
              <tr key={`${report.path}-${report.reason}`} data-path={report.path} data-class={report.class}>
                <td>
                  <code>{report.path}</code>
                </td>
                <td>{report.change}</td>
                <td>
                  <span class={`badge ${report.class}`}>{report.class}</span>
                </td>
                <td>{report.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {result.node_results.length > 0 && (
        <ul class="plain">
          {result.node_results.map((node) => (
            <li key={node.node_id}>
              {node.node_id}: {node.status} {node.error}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
