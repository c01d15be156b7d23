// The dashboard's client of the edge's UI API (agent-contract/outer/ui-api.md): JSON calls, the live feed and the
// playground stream. Same origin only; `login` trades the admin token for a session (an HttpOnly cookie holding a
// random id, never the token), `logout` ends it.
import type {
  UiCharts,
  UiKeys,
  UiNodeSessions,
  UiOverview,
  UiPlaygroundEvents,
  UiRefreshResult,
  UiRun,
  UiRunDetail,
  UiStreamEvents,
} from '@iop/ui-api';

export type * from '@iop/ui-api';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(path: string, init?: { method: 'POST'; body: unknown }): Promise<T> {
  const response = await fetch(path, {
    method: init?.method ?? 'GET',
    credentials: 'same-origin',
    headers: init ? { 'content-type': 'application/json' } : undefined,
    body: init ? JSON.stringify(init.body) : undefined,
  });
  const text = await response.text();
  const body = text ? (JSON.parse(text) as unknown) : {};
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } }).error;
    throw new ApiError(
      response.status,
      error?.code ?? 'http_error',
      error?.message ?? `HTTP ${response.status}`,
    );
  }
  return body as T;
}

export const api = {
  overview: () => call<UiOverview>('/api/v1/overview'),
  runs: (query: Record<string, string>) =>
    call<{ runs: UiRun[] }>(`/api/v1/runs?${new URLSearchParams(query).toString()}`),
  run: (runId: string) => call<UiRunDetail>(`/api/v1/runs/${encodeURIComponent(runId)}`),
  charts: () => call<UiCharts>('/api/v1/charts'),
  keys: (since: string) => call<UiKeys>(`/api/v1/keys?${new URLSearchParams({ since }).toString()}`),
  sessions: () => call<{ sessions: UiNodeSessions[] }>('/api/v1/sessions'),
  terminate: (body: { node_id: string; adapter: string; target: string; session_id: string }) =>
    call<{ terminated: boolean; node_id: string }>('/api/v1/sessions/terminate', { method: 'POST', body }),
  config: () => call<{ config: unknown }>('/api/v1/config'),
  refresh: (mode: 'dry-run' | 'apply', configYaml: string) =>
    call<UiRefreshResult>('/api/v1/config/refresh', {
      method: 'POST',
      body: { mode, config_yaml: configYaml },
    }),
  login: (token: string) =>
    call<{ authenticated: boolean; token_required: boolean }>('/api/v1/login', {
      method: 'POST',
      body: { token },
    }),
  loginState: () => call<{ token_required: boolean }>('/api/v1/login'),
  logout: () => call<{ authenticated: boolean }>('/api/v1/logout', { method: 'POST', body: {} }),
};

export type StreamHandlers = { [K in keyof UiStreamEvents]: (data: UiStreamEvents[K]) => void } & {
  onState: (connected: boolean) => void;
};

/** Opens the live feed; EventSource reconnects by itself after a drop. Returns the close function. */
export function openLiveFeed(handlers: StreamHandlers): () => void {
  const source = new EventSource('/api/v1/stream');
  const listen = <K extends keyof UiStreamEvents>(
    name: K,
    handler: (data: UiStreamEvents[K]) => void,
  ): void => {
    source.addEventListener(name, (event) => {
      handler(JSON.parse((event as MessageEvent<string>).data) as UiStreamEvents[K]);
    });
  };
  listen('overview', handlers.overview);
  listen('run', handlers.run);
  listen('charts', handlers.charts);
  source.onopen = () => handlers.onState(true);
  source.onerror = () => handlers.onState(false);
  return () => source.close();
}

export type PlaygroundEvent = {
  [K in keyof UiPlaygroundEvents]: { event: K; data: UiPlaygroundEvents[K] };
}[keyof UiPlaygroundEvents];

/** Sends a prompt and yields the answer's events as they stream in. */
export async function* playground(
  body: { model: string; prompt: string; max_tokens?: number },
  signal: AbortSignal,
): AsyncGenerator<PlaygroundEvent> {
  const response = await fetch('/api/v1/playground', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok || !response.body) {
    const error = ((await response.json()) as { error?: { code?: string; message?: string } }).error;
    throw new ApiError(
      response.status,
      error?.code ?? 'http_error',
      error?.message ?? `HTTP ${response.status}`,
    );
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf('\n\n');
        let event = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (data) yield { event, data: JSON.parse(data) as unknown } as PlaygroundEvent;
      }
    }
  } finally {
    reader.releaseLock();
  }
}
