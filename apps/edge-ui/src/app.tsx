// The dashboard shell: login when the edge asks for its admin token, the live feed (one EventSource: overview
// every second, run updates as they happen, charts), and the views behind a keyboard-reachable tab bar (#hash).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, openLiveFeed, type UiCharts, type UiOverview, type UiRun } from './api.js';
import { ChartsView } from './views/charts.js';
import { ConfigView } from './views/config.js';
import { FleetView } from './views/fleet.js';
import { KeysView } from './views/keys.js';
import { PlaygroundView } from './views/playground.js';
import { ProvidersView } from './views/providers.js';
import { RunsView } from './views/runs.js';
import { SessionsView } from './views/sessions.js';

const TABS = [
  ['fleet', 'Fleet'],
  ['providers', 'Providers & models'],
  ['runs', 'Runs'],
  ['keys', 'Keys'],
  ['sessions', 'Sessions'],
  ['charts', 'Charts'],
  ['config', 'Config'],
  ['playground', 'Playground'],
] as const;
type Tab = (typeof TABS)[number][0];
const RUNS_KEPT = 300;

function tabFromHash(): Tab {
  const hash = location.hash.replace(/^#\/?/, '');
  return TABS.find(([id]) => id === hash)?.[0] ?? 'fleet';
}

export function App() {
  const [tab, setTab] = useState<Tab>(tabFromHash());
  const [overview, setOverview] = useState<UiOverview | undefined>();
  const [runs, setRuns] = useState<UiRun[]>([]);
  const [charts, setCharts] = useState<UiCharts | undefined>();
  const [live, setLive] = useState(false);
  const [auth, setAuth] = useState<'checking' | 'needed' | 'ok'>('checking');
  const [tokenRequired, setTokenRequired] = useState(false);
  const [error, setError] = useState('');

  useEffect(() => {
    const onHash = () => setTab(tabFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    // Sign out only means something when the edge asks for a token.
    api
      .loginState()
      .then((state) => setTokenRequired(state.token_required))
      .catch(() => setTokenRequired(false));
  }, []);

  useEffect(() => {
    if (auth !== 'checking') return;
    let cancelled = false;
    Promise.all([api.overview(), api.runs({ limit: String(RUNS_KEPT) }), api.charts()])
      .then(([first, recent, series]) => {
        if (cancelled) return;
        setOverview(first);
        setRuns(recent.runs);
        setCharts(series);
        setAuth('ok');
      })
      .catch((failure: unknown) => {
        if (failure instanceof ApiError && failure.status === 401) setAuth('needed');
        else setError(String(failure));
      });
    return () => {
      cancelled = true;
    };
  }, [auth]);

  useEffect(() => {
    if (auth !== 'ok') return;
    return openLiveFeed({
      overview: setOverview,
      charts: setCharts,
      run: (run) =>
        setRuns((current) => {
          const rest = current.filter((entry) => entry.run_id !== run.run_id);
          const known = current.find((entry) => entry.run_id === run.run_id);
          // Keep a run's place in the list (newest first by start); new runs go on top.
          if (known) return current.map((entry) => (entry.run_id === run.run_id ? run : entry));
          return [run, ...rest].slice(0, RUNS_KEPT);
        }),
      onState: setLive,
    });
  }, [auth]);

  if (auth === 'needed') return <Login onDone={() => setAuth('checking')} />;

  return (
    <div class="shell">
      <header class="top">
        <h1>
          IOP edge <span class="muted">{overview ? `${overview.edge_id} · v${overview.version}` : ''}</span>
        </h1>
        <span class={`live ${live ? 'on' : 'off'}`} role="status" aria-live="polite">
          {live ? '● live' : '○ reconnecting'}
        </span>
        {overview && (
          <span class="totals" data-testid="totals">
            {overview.nodes.length} nodes · {overview.totals.in_flight} in flight · {overview.totals.queued}{' '}
            queued
          </span>
        )}
        {tokenRequired && (
          <button
            type="button"
            class="logout"
            onClick={() => {
              api
                .logout()
                .then(() => setAuth('checking'))
                .catch((failure: unknown) => setError(String(failure)));
            }}
          >
            Sign out
          </button>
        )}
        {overview?.cluster && (
          // Cluster mode: the figures above are cluster-wide; each edge's share.
          <span class="totals" data-testid="cluster-edges">
            {overview.cluster.edges.length} edges:{' '}
            {overview.cluster.edges
              .map(
                (edge) =>
                  `${edge.edge_id} ${edge.nodes} nodes ${edge.in_flight}/${edge.capacity} in flight ${edge.queued} queued`,
              )
              .join(' · ')}
          </span>
        )}
      </header>
      <nav class="tabs" aria-label="Dashboard views">
        {TABS.map(([id, label]) => (
          <a
            key={id}
            href={`#${id}`}
            class={tab === id ? 'tab active' : 'tab'}
            aria-current={tab === id ? 'page' : undefined}
          >
            {label}
          </a>
        ))}
      </nav>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <main>
        {!overview ? (
          <p class="muted">Loading…</p>
        ) : tab === 'fleet' ? (
          <FleetView overview={overview} />
        ) : tab === 'providers' ? (
          <ProvidersView overview={overview} />
        ) : tab === 'runs' ? (
          <RunsView runs={runs} />
        ) : tab === 'keys' ? (
          <KeysView />
        ) : tab === 'sessions' ? (
          <SessionsView />
        ) : tab === 'charts' ? (
          <ChartsView charts={charts} />
        ) : tab === 'config' ? (
          <ConfigView />
        ) : (
          <PlaygroundView overview={overview} />
        )}
      </main>
    </div>
  );
}

function Login({ onDone }: { onDone: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  return (
    <form
      class="login"
      onSubmit={(event) => {
        event.preventDefault();
        api
          .login(token)
          .then(onDone)
          .catch((failure: unknown) =>
            setError(failure instanceof Error ? failure.message : String(failure)),
          );
      }}
    >
      <h1>IOP edge</h1>
      <label for="token">Admin token (refresh.admin_token)</label>
      <input
        id="token"
        type="password"
        autocomplete="current-password"
        value={token}
        onInput={(e) => setToken(e.currentTarget.value)}
      />
      <button type="submit">Sign in</button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
