// Shared fixtures for HTTP adapter tests: adapter instances, real-fetch deps with a recording logger, run
// requests, and a collector that bounds every run in time so a broken adapter fails instead of hanging.
import { systemClock } from '@iop/clock';
import {
  create,
  type AdapterInstance,
  type HttpAdapterSettings,
  type RunEventPart,
  type RunRequest,
} from '@iop/wire';

import type { AdapterDeps, AdapterLogger } from '../../adapter.js';
import { createNodeHttpClient } from '../node-http-client.js';

export function httpInstance(
  type: 'ollama' | 'openai_compat',
  name: string,
  http: Partial<HttpAdapterSettings>,
): AdapterInstance {
  return {
    name,
    type,
    enabled: true,
    http: { provider: '', baseUrl: '', headers: {}, requestTimeoutMs: 5000, contextSize: 0, ...http },
  };
}

export interface RecordingLogger extends AdapterLogger {
  entries: { level: string; fields: Record<string, unknown>; message: string }[];
}

export function recordingLogger(): RecordingLogger {
  const entries: RecordingLogger['entries'] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, message: string): void => {
      entries.push({ level, fields, message });
    };
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Upstream client of the adapter tests: the production one, unless a test injects its own fetch. */
const sharedHttpClient = createNodeHttpClient({ clock: systemClock });

export function testDeps(overrides: Partial<AdapterDeps> = {}): AdapterDeps & { logger: RecordingLogger } {
  return {
    fetch: globalThis.fetch,
    ...(overrides.fetch === undefined ? { http: sharedHttpClient } : {}),
    logger: recordingLogger(),
    now: () => Date.now(),
    clock: systemClock,
    ...overrides,
  } as AdapterDeps & {
    logger: RecordingLogger;
  };
}

export function userRun(target: string, text: string, fields: Partial<RunRequest> = {}): RunRequest {
  return create.runRequest({
    runId: 'run-1',
    adapter: 'test',
    target,
    sessionId: 'session-1',
    messages: [create.chatMessage({ role: 'user', content: text })],
    ...fields,
  });
}

/** Collects a run's parts; fails after `timeoutMs` so a hanging adapter cannot stall the suite. */
export async function collect(parts: AsyncIterable<RunEventPart>, timeoutMs = 5000): Promise<RunEventPart[]> {
  const out: RunEventPart[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`run did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const part of parts) out.push(part);
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
  return out;
}

export function textOf(parts: RunEventPart[], type: 'text-delta' | 'reasoning-delta' = 'text-delta'): string {
  return parts
    .filter((part): part is Extract<RunEventPart, { type: typeof type }> => part.type === type)
    .map((part) => part.text)
    .join('');
}

export function terminalOf(parts: RunEventPart[]): RunEventPart {
  const last = parts[parts.length - 1];
  if (!last) throw new Error('run yielded nothing');
  return last;
}

/** A port that was just free: connecting to it is refused. */
export async function closedPortUrl(): Promise<string> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/**
 * The parts as the edge sees them once the runner has sent them: adjacent deltas of one kind joined, and the
 * terminal part's backendMs (timing) zeroed, so a streamed and a collected run of the same answer compare equal.
 */
export function edgeView(parts: RunEventPart[]): unknown[] {
  const out: Record<string, unknown>[] = [];
  for (const part of parts) {
    const last = out[out.length - 1];
    if ((part.type === 'text-delta' || part.type === 'reasoning-delta') && last?.type === part.type)
      last.text = `${last.text as string}${part.text}`;
    else if (part.type === 'complete' || part.type === 'error') out.push({ ...part, backendMs: 0 });
    else out.push({ ...part });
  }
  return out;
}
