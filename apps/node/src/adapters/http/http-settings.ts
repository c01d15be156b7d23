// Settings of an HTTP adapter instance, read once from `instance.http` with defaults applied. A missing or
// unusable base_url is a configuration error at build time, not at the first run.
import type { AdapterInstance } from '@iop/wire';

import { trimBaseUrl } from './base-url.js';

/** Used when request_timeout_ms is 0: long enough for a cold model load before the first token. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
/** Health probes are cheap calls; they never wait longer than this (or request_timeout_ms if shorter). */
export const HEALTH_PROBE_TIMEOUT_MS = 5_000;

export interface HttpSettings {
  provider: string;
  baseUrl: string;
  headers: Record<string, string>;
  requestTimeoutMs: number;
  /** 0 when unset. */
  contextSize: number;
}

export class HttpSettingsError extends Error {
  override readonly name = 'HttpSettingsError';
  readonly code = 'invalid_config';
}

export function readHttpSettings(instance: AdapterInstance, defaultBaseUrl: string): HttpSettings {
  const http = instance.http;
  const baseUrl = trimBaseUrl(http?.baseUrl || defaultBaseUrl);
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new HttpSettingsError(`adapter '${instance.name}': base_url '${baseUrl}' is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new HttpSettingsError(
      `adapter '${instance.name}': base_url must be http(s), got '${parsed.protocol}'`,
    );
  }
  return {
    provider: http?.provider ?? '',
    baseUrl,
    headers: { ...(http?.headers ?? {}) },
    requestTimeoutMs: http?.requestTimeoutMs || DEFAULT_REQUEST_TIMEOUT_MS,
    contextSize: http?.contextSize ?? 0,
  };
}

export function probeTimeoutMs(settings: HttpSettings): number {
  return Math.min(settings.requestTimeoutMs, HEALTH_PROBE_TIMEOUT_MS);
}
