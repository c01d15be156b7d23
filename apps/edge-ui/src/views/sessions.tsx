// Sessions: the CLI sessions each node holds per CLI adapter, with their state; terminate one (two clicks).
import { useEffect, useState } from 'preact/hooks';
import { api, type UiNodeSessions } from '../api.js';

export function SessionsView() {
  const [rows, setRows] = useState<UiNodeSessions[] | undefined>();
  const [error, setError] = useState('');
  const [armed, setArmed] = useState('');
  const [message, setMessage] = useState('');
  const load = () => {
    api
      .sessions()
      .then((answer) => {
        setRows(answer.sessions);
        setError('');
      })
      .catch((failure: unknown) => setError(String(failure)));
  };
  useEffect(load, []);
  const terminate = (row: UiNodeSessions, sessionId: string, target: string) => {
    api
      .terminate({ node_id: row.node_id, adapter: row.adapter, target, session_id: sessionId })
      .then(() => {
        setMessage(`Terminated ${sessionId} on ${row.node_id}.`);
        setArmed('');
        load();
      })
      .catch((failure: unknown) => setError(String(failure)));
  };
  return (
    <section aria-labelledby="sessions-title">
      <h2 id="sessions-title">CLI sessions</h2>
      <button type="button" onClick={load}>
        Refresh
      </button>
      {message && (
        <p role="status" class="ok">
          {message}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {rows === undefined ? (
        <p class="muted">Loading…</p>
      ) : rows.length === 0 ? (
        <p class="muted">No connected node has a CLI adapter.</p>
      ) : (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th>Node</th>
                <th>Adapter</th>
                <th>Session</th>
                <th>Target</th>
                <th>State</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.flatMap((row) =>
                row.error
                  ? [
                      <tr key={`${row.node_id}/${row.adapter}`}>
                        <td>{row.node_id}</td>
                        <td>{row.adapter}</td>
                        <td colSpan={4} class="error">
                          {row.error}
                        </td>
                      </tr>,
                    ]
                  : row.sessions.length === 0
                    ? [
                        <tr key={`${row.node_id}/${row.adapter}`}>
                          <td>{row.node_id}</td>
                          <td>{row.adapter}</td>
                          <td colSpan={4} class="muted">
                            no sessions
                          </td>
                        </tr>,
                      ]
                    : row.sessions.map((session) => {
                        const key = `${row.node_id}/${row.adapter}/${session.session_id}`;
                        return (
                          <tr key={key} data-session={session.session_id}>
                            <td>{row.node_id}</td>
                            <td>{row.adapter}</td>
                            <td>
                              <code>{session.session_id}</code>
                            </td>
                            <td>{session.target}</td>
                            <td>{session.mode}</td>
                            <td>
                              {armed === key ? (
                                <button
                                  type="button"
                                  class="danger"
                                  onClick={() => terminate(row, session.session_id, session.target)}
                                >
                                  Confirm terminate
                                </button>
                              ) : (
                                <button type="button" onClick={() => setArmed(key)}>
                                  Terminate
                                </button>
                              )}
                            </td>
                          </tr>
                        );
                      }),
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
