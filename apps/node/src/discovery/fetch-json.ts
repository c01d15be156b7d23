// One bounded HTTP GET for discovery: a deadline covering connect, headers and body (a server that accepts and
// never answers costs at most `timeoutMs`), a cap on the body, and no exceptions — a probe either gets JSON or
// learns nothing.
export const PROBE_MAX_BODY_BYTES = 1024 * 1024;

export async function fetchJson(
  fetchFunction: typeof fetch,
  url: string,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<unknown> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal.reason);
  if (options.signal.aborted) return undefined;
  options.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new Error('probe timed out')), options.timeoutMs);
  timer.unref?.();
  // The deadline also settles a fetch implementation that ignores the signal.
  const deadline = new Promise<undefined>((resolve) => {
    controller.signal.addEventListener('abort', () => resolve(undefined), { once: true });
  });
  try {
    return await Promise.race([read(fetchFunction, url, controller.signal), deadline]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
    if (!controller.signal.aborted) controller.abort(new Error('probe finished'));
  }
}

async function read(fetchFunction: typeof fetch, url: string, signal: AbortSignal): Promise<unknown> {
  const response = await fetchFunction(url, { signal, headers: { accept: 'application/json' } });
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > PROBE_MAX_BODY_BYTES) return undefined;
      chunks.push(value);
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `items[].<key>` strings of a JSON list, skipping anything malformed. */
export function stringsOf(items: unknown, key: string): string[] {
  if (!Array.isArray(items)) return [];
  const out: string[] = [];
  for (const item of items) {
    const value = isRecord(item) ? item[key] : undefined;
    if (typeof value === 'string' && value) out.push(value);
  }
  return out;
}
