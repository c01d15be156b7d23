// Model-server probes. Ollama at OLLAMA_HOST (or 127.0.0.1:11434): `/api/version`, `/api/tags`, `/api/ps`.
// OpenAI-compatible servers at configured URLs and the usual loopback ports: `/v1/models`, then `/version` and
// `/health` only to tell the flavours apart. Every request is a bounded GET; nothing is ever posted.
import type { DiscoveredBackend } from '@iop/wire';
import type { HttpClient } from '../adapters/http/http-client.js';
import { fetchJson, isRecord, stringsOf, type ProbeFailure } from './fetch-json.js';

export const DEFAULT_OLLAMA_ADDRESS = '127.0.0.1:11434';

/** vLLM 8000, llama.cpp server 8080, LM Studio 1234, SGLang 30000. */
export const DEFAULT_LOCAL_PORTS: readonly number[] = [8000, 8080, 1234, 30000];

/** Which flavour a default port usually belongs to, when the server itself does not say. */
const PORT_KINDS: Readonly<Record<number, string>> = {
  8000: 'vllm',
  8080: 'llama.cpp',
  1234: 'lmstudio',
  30000: 'sglang',
};

/** `/v1/models` `owned_by` values the servers put there themselves. */
const OWNER_KINDS: Readonly<Record<string, string>> = {
  vllm: 'vllm',
  llamacpp: 'llama.cpp',
  sglang: 'sglang',
  organization_owner: 'lmstudio',
};

export interface HttpProbeOptions {
  http: HttpClient;
  timeoutMs: number;
  signal: AbortSignal;
  /** Why the request that decides whether a server is there (`/api/tags`, `/models`) got nothing. */
  onFailure?: (failure: ProbeFailure) => void;
}

/**
 * OLLAMA_HOST as a base URL: `host:port`, `:port`, `http(s)://host:port` or a bare host; a wildcard bind
 * address is dialled on loopback. Throws on a value that is not a URL.
 */
export function ollamaBaseUrl(ollamaHost: string | undefined): string {
  const raw = (ollamaHost ?? '').trim() || DEFAULT_OLLAMA_ADDRESS;
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw);
  const url = new URL(hasScheme ? raw : `http://${raw.startsWith(':') ? `127.0.0.1${raw}` : raw}`);
  // A bare host means Ollama's own port; with a scheme, the scheme's port (as the ollama client does).
  if (!hasScheme && !url.port) url.port = '11434';
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = '127.0.0.1';
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** A configured OpenAI-compatible URL as the adapter's base URL (ending in /v1). Throws on a non-URL. */
export function openAICompatBaseUrl(value: string): string {
  const url = new URL(value.trim());
  const pathname = url.pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.host}${pathname.endsWith('/v1') ? pathname : `${pathname}/v1`}`;
}

export async function probeOllama(
  baseUrl: string,
  options: HttpProbeOptions,
): Promise<DiscoveredBackend | undefined> {
  const request = { timeoutMs: options.timeoutMs, signal: options.signal };
  const [version, tags, running] = await Promise.all([
    fetchJson(options.http, `${baseUrl}/api/version`, request),
    fetchJson(options.http, `${baseUrl}/api/tags`, { ...request, onFailure: options.onFailure }),
    fetchJson(options.http, `${baseUrl}/api/ps`, request),
  ]);
  // /api/tags answering with a models list is what makes it Ollama; the version alone could be anything.
  if (!isRecord(tags) || !Array.isArray(tags['models'])) {
    if (tags !== undefined) {
      options.onFailure?.({
        url: `${baseUrl}/api/tags`,
        cause: 'invalid_response',
        detail: 'no models list',
      });
    }
    return undefined;
  }
  return {
    kind: 'ollama',
    baseUrl,
    models: uniqueSorted(stringsOf(tags['models'], 'name')),
    version: isRecord(version) && typeof version['version'] === 'string' ? version['version'] : '',
    loadedModels: isRecord(running) ? uniqueSorted(stringsOf(running['models'], 'name')) : [],
  };
}

/** Probes `<baseUrl>/models`; undefined when nothing OpenAI-compatible answers there. */
export async function probeOpenAICompat(
  baseUrl: string,
  options: HttpProbeOptions & { portHint?: number },
): Promise<DiscoveredBackend | undefined> {
  const request = { timeoutMs: options.timeoutMs, signal: options.signal };
  const listing = await fetchJson(options.http, `${baseUrl}/models`, {
    ...request,
    onFailure: options.onFailure,
  });
  if (!isRecord(listing) || !Array.isArray(listing['data'])) {
    if (listing !== undefined) {
      options.onFailure?.({ url: `${baseUrl}/models`, cause: 'invalid_response', detail: 'no data list' });
    }
    return undefined;
  }
  const models = uniqueSorted(stringsOf(listing['data'], 'id'));
  const owners = stringsOf(listing['data'], 'owned_by');
  const root = baseUrl.replace(/\/v1$/, '');
  const versionBody = await fetchJson(options.http, `${root}/version`, request);
  const version =
    isRecord(versionBody) && typeof versionBody['version'] === 'string' ? versionBody['version'] : '';
  let kind = owners.map((owner) => OWNER_KINDS[owner]).find((value) => value !== undefined);
  // vLLM answers /version; llama.cpp answers /health with {"status":"ok"}; otherwise the port is the best hint.
  if (!kind && version) kind = 'vllm';
  if (!kind) {
    const health = await fetchJson(options.http, `${root}/health`, request);
    if (isRecord(health) && health['status'] === 'ok') kind = 'llama.cpp';
  }
  kind ??= (options.portHint !== undefined ? PORT_KINDS[options.portHint] : undefined) ?? 'openai_compat';
  return { kind, baseUrl, models, version, loadedModels: [] };
}

function uniqueSorted(values: readonly string[]): string[] {
  return [...new Set(values)].sort();
}
