// Providers and models: live capacity bars (in flight of capacity, queued), health and priority per provider;
// agent runs with their model calls (child runs: live / all, tokens so far); the routing table (models[] →
// providers, model_routes, fallback) with queue depth and 429/503 counts.
import type { UiOverview, UiProvider } from '../api.js';
import { count } from '../format.js';

function Bar({ provider }: { provider: UiProvider }) {
  const capacity = Math.max(provider.capacity, 1);
  const used = Math.min(100, (provider.in_flight / capacity) * 100);
  return (
    <div
      class="bar"
      role="meter"
      aria-valuemin={0}
      aria-valuemax={provider.capacity}
      aria-valuenow={provider.in_flight}
      aria-label={`${provider.provider_id} in flight`}
    >
      <div class={used >= 100 ? 'fill full' : 'fill'} style={{ width: `${used}%` }} />
    </div>
  );
}

export function ProvidersView({ overview }: { overview: UiOverview }) {
  return (
    <section aria-labelledby="providers-title">
      <h2 id="providers-title">Providers</h2>
      <ProviderTable overview={overview} />
      <AgentRuns overview={overview} />
      <ModelTable overview={overview} />
      <Routing overview={overview} />
    </section>
  );
}

function ProviderTable({ overview }: { overview: UiOverview }) {
  return (
    <>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Provider</th>
              <th>Node</th>
              <th>Load</th>
              <th>In flight</th>
              <th>Queued</th>
              <th>Health</th>
              <th>Priority</th>
              <th>Serves</th>
            </tr>
          </thead>
          <tbody>
            {overview.providers.map((provider) => (
              <tr
                key={provider.provider_id}
                data-provider={provider.provider_id}
                data-in-flight={provider.in_flight}
                data-capacity={provider.capacity}
              >
                <td>
                  <strong>{provider.provider_id}</strong>
                  <div class="muted">{provider.status}</div>
                </td>
                <td>{provider.node_id}</td>
                <td class="barcell">
                  <Bar provider={provider} />
                </td>
                <td class="num" data-testid="in-flight">
                  {provider.in_flight} / {provider.capacity}
                </td>
                <td class="num">{count(provider.queued, 'waiting')}</td>
                <td>
                  <span class={`badge ${provider.health}`} title={provider.health_detail}>
                    {provider.health}
                  </span>
                  {provider.health_cause && (
                    <div class="muted" data-testid="health-cause" title={provider.health_detail}>
                      {provider.health_cause}
                    </div>
                  )}
                </td>
                <td class="num">{provider.priority}</td>
                <td>
                  {provider.served_models.join(', ') || '–'}
                  {provider.resident_state !== undefined && provider.resident_state !== 'unknown' && (
                    <div class="muted" data-testid="resident">
                      loaded: {provider.resident_models?.join(', ') || 'none'}
                      {provider.resident_state === 'stale' ? ' (stale)' : ''}
                    </div>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function AgentRuns({ overview }: { overview: UiOverview }) {
  return (
    <>
      <h2>Agent runs</h2>
      {overview.agent_runs.length === 0 ? (
        <p class="muted">No agent run is making model calls.</p>
      ) : (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th>Run</th>
                <th>Node</th>
                <th>Key</th>
                <th>Model</th>
                <th>Model calls (live / all)</th>
                <th>Tokens (own + calls)</th>
              </tr>
            </thead>
            <tbody>
              {overview.agent_runs.map((run) => (
                <tr key={run.run_id} data-agent-run={run.run_id}>
                  <td>{run.run_id.slice(0, 12)}</td>
                  <td>{run.node_id}</td>
                  <td>{run.principal || '–'}</td>
                  <td>{run.model}</td>
                  <td class="num">
                    {run.live_children} / {run.children}
                  </td>
                  <td class="num">
                    {count(run.tokens, 'tok')} + {count(run.child_tokens, 'tok')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function ModelTable({ overview }: { overview: UiOverview }) {
  return (
    <>
      <h2>Models</h2>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Model</th>
              <th>Providers → served name</th>
              <th>Queued</th>
              <th>429</th>
              <th>503</th>
            </tr>
          </thead>
          <tbody>
            {overview.models.map((model) => (
              <tr key={model.id} data-model={model.id}>
                <td>
                  <strong>{model.id}</strong>
                  {model.display_name && model.display_name !== model.id && (
                    <div class="muted">{model.display_name}</div>
                  )}
                </td>
                <td>
                  {Object.entries(model.providers).map(([provider, served]) => (
                    <div key={provider}>
                      {provider} → <code>{served}</code>
                    </div>
                  ))}
                </td>
                <td class="num">{count(model.queued, 'waiting')}</td>
                <td class="num">{model.rejected_429}</td>
                <td class="num">{model.rejected_503}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Routing({ overview }: { overview: UiOverview }) {
  return (
    <>
      <h3>Explicit routes (openai.model_routes)</h3>
      {overview.routes.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul class="plain">
          {overview.routes.map((route) => (
            <li key={route.model}>
              <code>{route.model}</code> → {route.node || 'any node'} / {route.adapter} /{' '}
              {route.target || '(model)'}
            </li>
          ))}
        </ul>
      )}
      <h3>Fallback</h3>
      <p>
        {overview.fallback.adapter
          ? `${overview.fallback.adapter} / ${overview.fallback.target || '(the requested model)'}${
              overview.fallback.models.length ? ` · also lists ${overview.fallback.models.join(', ')}` : ''
            }`
          : 'None: unknown models are rejected.'}
      </p>
    </>
  );
}
