// `/v1/models` of an OpenAI-compatible server: the served model ids (vLLM adds root and max_model_len, which
// are kept for the readable command result).
import type { ModelInfo } from '@iop/wire';

import type { UpstreamExchange } from '../http/upstream-exchange.js';
import { UpstreamError } from '../http/upstream-error.js';

export interface ServedModel {
  id: string;
  ownedBy: string;
  maxModelLen: number;
}

export async function listOpenAIModels(
  exchange: UpstreamExchange,
  url: string,
  headers: Record<string, string>,
): Promise<ServedModel[]> {
  const body = await exchange.json(await exchange.send(url, { method: 'GET', headers }));
  const data = typeof body === 'object' && body !== null ? (body as { data?: unknown }).data : undefined;
  if (!Array.isArray(data)) {
    throw new UpstreamError('upstream_error', 'upstream model list has no "data" array', {
      retryable: false,
    });
  }
  return (data as unknown[])
    .map((entry) => (typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {}))
    .filter((entry) => typeof entry.id === 'string' && entry.id !== '')
    .map((entry) => ({
      id: entry.id as string,
      ownedBy: typeof entry.owned_by === 'string' ? entry.owned_by : '',
      maxModelLen: typeof entry.max_model_len === 'number' ? entry.max_model_len : 0,
    }));
}

export function toModelInfo(model: ServedModel): ModelInfo {
  // A served model is loaded by definition: the server serves exactly what it has in memory.
  return { name: model.id, sizeBytes: 0, digest: '', loaded: true, expiresAt: '' };
}
