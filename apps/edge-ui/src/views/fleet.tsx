// Fleet: every connected node with its console label, identity, platform, agent, connection and heartbeat age,
// adapters and provider health; then the reasons of recent departures.
import type { UiDiscovered, UiOverview } from '../api.js';
import { age, bytes, dateTime } from '../format.js';

export function FleetView({ overview }: { overview: UiOverview }) {
  const now = overview.now_ms;
  return (
    <section aria-labelledby="fleet-title">
      <h2 id="fleet-title">Fleet</h2>
      {overview.nodes.length === 0 ? (
        <p class="muted">No node is connected.</p>
      ) : (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th>Label</th>
                <th>Node</th>
                <th>OS / arch</th>
                <th>Agent</th>
                <th>Connected since</th>
                <th>Heartbeat</th>
                <th>Adapters</th>
                <th>Provider health</th>
                <th>Discovered</th>
              </tr>
            </thead>
            <tbody>
              {overview.nodes.map((node) => (
                <tr key={node.node_id} data-node={node.node_id}>
                  <td>{node.label}</td>
                  <td>
                    <strong>{node.alias || node.node_id}</strong>
                    {node.alias && node.alias !== node.node_id && <div class="muted">{node.node_id}</div>}
                    <div class="muted">{node.hostname || node.remote_address}</div>
                  </td>
                  <td>
                    {node.os}/{node.arch}
                  </td>
                  <td>{node.agent_version}</td>
                  <td>{dateTime(node.connected_since_ms)}</td>
                  <td>{age(now, node.last_heartbeat_ms)}</td>
                  <td>{node.adapters.join(', ') || '–'}</td>
                  <td>
                    {node.providers.length === 0
                      ? '–'
                      : node.providers.map((provider) => (
                          <span
                            key={provider.provider_id}
                            class={`badge ${provider.health}`}
                            title={provider.detail}
                            data-cause={provider.cause}
                          >
                            {provider.provider_id}: {provider.health}
                            {provider.cause ? ` (${provider.cause})` : ''}
                          </span>
                        ))}
                  </td>
                  <td>
                    {node.discovered ? (
                      <Discovered discovered={node.discovered} />
                    ) : (
                      <span class="muted">–</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h3>Recent departures</h3>
      {overview.departures.length === 0 ? (
        <p class="muted">None since the edge started.</p>
      ) : (
        <ul class="plain">
          {overview.departures.map((departure) => (
            <li key={`${departure.node_id}-${departure.at_ms}`}>
              {dateTime(departure.at_ms)} · <strong>{departure.alias || departure.node_id}</strong> ·{' '}
              {departure.reason}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The node's own report of what it can run: model servers, coding-agent CLIs, host size. */
function Discovered({ discovered }: { discovered: UiDiscovered }) {
  const host = discovered.host;
  return (
    <div class="discovered">
      {discovered.backends.map((backend) => (
        <div key={backend.base_url}>
          {backend.kind} {backend.version && <span class="muted">{backend.version}</span>} ·{' '}
          {backend.models.length} models
        </div>
      ))}
      {discovered.clis.length > 0 && (
        <div>CLIs: {discovered.clis.map((cli) => `${cli.name} ${cli.version}`.trim()).join(', ')}</div>
      )}
      <div class="muted">
        {host.cpu_cores} cores · {bytes(host.memory_bytes)}
        {host.gpus.map((gpu) => ` · ${gpu.name} ${bytes(gpu.memory_bytes)}`).join('')}
      </div>
    </div>
  );
}
