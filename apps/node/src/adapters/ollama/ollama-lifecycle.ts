// Ollama's model lifecycle as node commands: list (`/api/tags` + `/api/ps`), load (empty prompt on
// `/api/generate`), unload (`keep_alive: 0`), pull (`/api/pull` NDJSON progress relayed line by line).
import { type ModelInfo, type ProviderLifecycleProgress } from '@iop/wire';

import { errorMessageFromEvent } from '../http/error-body.js';
import { readNdjson } from '../http/ndjson-reader.js';
import type { UpstreamExchange } from '../http/upstream-exchange.js';
import { UpstreamError } from '../http/upstream-error.js';

export interface OllamaEndpoint {
  url: (path: string) => string;
  headers: Record<string, string>;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function asString(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function asNumber(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function modelEntries(body: unknown): Json[] {
  const models = asObject(body).models;
  if (!Array.isArray(models)) {
    throw new UpstreamError('upstream_error', 'upstream model list has no "models" array', {
      retryable: false,
    });
  }
  return models.map(asObject);
}

/** Installed models (tags) merged with running ones (ps): loaded models carry `loaded` and `expiresAt`. */
export async function listOllamaModels(
  exchange: UpstreamExchange,
  endpoint: OllamaEndpoint,
): Promise<ModelInfo[]> {
  const tags = modelEntries(
    await exchange.json(
      await exchange.send(endpoint.url('/api/tags'), { method: 'GET', headers: endpoint.headers }),
    ),
  );
  const running = modelEntries(
    await exchange.json(
      await exchange.send(endpoint.url('/api/ps'), { method: 'GET', headers: endpoint.headers }),
    ),
  );
  const loaded = new Map(running.map((entry) => [asString(entry.name) || asString(entry.model), entry]));
  const models: ModelInfo[] = tags.map((entry) => {
    const name = asString(entry.name) || asString(entry.model);
    const live = loaded.get(name);
    loaded.delete(name);
    return {
      name,
      sizeBytes: asNumber(entry.size),
      digest: asString(entry.digest),
      loaded: live !== undefined,
      expiresAt: live ? asString(live.expires_at) : '',
    };
  });
  for (const [name, entry] of loaded) {
    models.push({
      name,
      sizeBytes: asNumber(entry.size),
      digest: asString(entry.digest),
      loaded: true,
      expiresAt: asString(entry.expires_at),
    });
  }
  return models;
}

/** Only the installed names (the cheap half of list, used by health probes). */
export async function listOllamaTags(
  exchange: UpstreamExchange,
  endpoint: OllamaEndpoint,
): Promise<string[]> {
  const tags = modelEntries(
    await exchange.json(
      await exchange.send(endpoint.url('/api/tags'), { method: 'GET', headers: endpoint.headers }),
    ),
  );
  return tags.map((entry) => asString(entry.name) || asString(entry.model)).filter((name) => name !== '');
}

/** The names of the models Ollama holds loaded now (`/api/ps`), as it spells them (e.g. `llama3.2:latest`). */
export async function listOllamaRunning(
  exchange: UpstreamExchange,
  endpoint: OllamaEndpoint,
): Promise<string[]> {
  const running = modelEntries(
    await exchange.json(
      await exchange.send(endpoint.url('/api/ps'), { method: 'GET', headers: endpoint.headers }),
    ),
  );
  return running.map((entry) => asString(entry.name) || asString(entry.model)).filter((name) => name !== '');
}

/** keep_alive from a command argument: a number of seconds or a duration string such as `10m`. */
export function keepAliveArg(value: string | undefined): number | string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  return /^-?\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : trimmed;
}

/** Loads (keep_alive unset or positive) or unloads (keep_alive 0) a model; returns Ollama's done_reason. */
export async function setOllamaModelLoaded(
  exchange: UpstreamExchange,
  endpoint: OllamaEndpoint,
  model: string,
  keepAlive: number | string | undefined,
): Promise<string> {
  const body: Json = { model, prompt: '', stream: false };
  if (keepAlive !== undefined) body.keep_alive = keepAlive;
  const answer = asObject(
    await exchange.json(
      await exchange.send(endpoint.url('/api/generate'), { method: 'POST', headers: endpoint.headers, body }),
    ),
  );
  return asString(answer.done_reason);
}

/** Byte-progress lines of one status closer together than this are skipped (Ollama sends them per chunk). */
export const PULL_PROGRESS_INTERVAL_MS = 250;

/**
 * Pulls a model, relaying progress; resolves on `success`, throws on an error line or a cut stream. Every status
 * change and every finished layer is relayed; byte counts within one status at most every
 * PULL_PROGRESS_INTERVAL_MS, so a fast pull does not flood the edge link.
 */
export async function pullOllamaModel(
  exchange: UpstreamExchange,
  endpoint: OllamaEndpoint,
  model: string,
  providerId: string,
  onProgress: (progress: ProviderLifecycleProgress) => void,
  now: () => number,
): Promise<void> {
  let lastStatus = '';
  let lastAt = Number.NEGATIVE_INFINITY;
  // The JS client sends `name`; newer servers read `model`. Sending both works with every version.
  const response = await exchange.send(endpoint.url('/api/pull'), {
    method: 'POST',
    headers: { ...endpoint.headers, accept: 'application/x-ndjson' },
    body: { model, name: model, stream: true },
  });
  for await (const value of readNdjson(exchange.chunks(response))) {
    const failure = errorMessageFromEvent(value);
    if (failure !== undefined) throw new UpstreamError('upstream_error', failure, { retryable: false });
    const line = asObject(value);
    const status = asString(line.status);
    const total = asNumber(line.total);
    const completed = asNumber(line.completed);
    const at = now();
    const relay =
      status !== lastStatus || (total > 0 && completed >= total) || at - lastAt >= PULL_PROGRESS_INTERVAL_MS;
    if (relay) {
      lastStatus = status;
      lastAt = at;
      onProgress({ providerId, model, status, digest: asString(line.digest), total, completed });
    }
    if (status === 'success') return;
  }
  throw new UpstreamError('upstream_error', `pull of ${model} ended without "success"`, { retryable: true });
}
