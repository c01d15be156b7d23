// The HTTP client the node's upstream exchanges speak through: one request, its status and its body as a byte
// stream. An interface so the adapters never depend on a transport: production uses `createNodeHttpClient`
// (our own HTTP/1.1 client on net/tls sockets with a keep-alive pool), and `fetchHttpClient` adapts any `fetch` (tests that inject one, or
// runtimes where that is all there is).
import { toAbortSignal, type AbortSignalLike } from '../cancellation.js';

/** One request. The body is already serialized; aborting `signal` closes the connection at once. */
export interface HttpClientRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** An AbortSignal or the cheaper `Cancellation` (what an upstream exchange passes). */
  signal: AbortSignalLike;
}

/** A response whose headers arrived. Its body must be read to the end or `cancel()`ed. */
export interface HttpClientResponse {
  status: number;
  statusText: string;
  /** A response header's value (names are case-insensitive); repeated headers joined with ", ". */
  header(name: string): string | undefined;
  /** The body as it arrives; ends when the server finishes it, throws when the connection breaks. */
  body: AsyncIterable<Uint8Array>;
  /** Drops the rest of the body and closes the connection (it cannot be reused mid-body). Idempotent. */
  cancel(): void;
  /**
   * The caller has all it needs (e.g. an SSE stream's `[DONE]` before the body's end): read and drop the rest
   * so the connection can be reused, closing it if the rest does not arrive promptly. Idempotent.
   */
  discard(): void;
}

export interface HttpClient {
  /** Resolves when the response headers arrived; connection failures and aborts reject. */
  request(url: string, init: HttpClientRequest): Promise<HttpClientResponse>;
}

/** A `fetch` as an HttpClient (WHATWG streams underneath: more CPU per chunk than createNodeHttpClient). */
export function fetchHttpClient(fetchImpl: typeof fetch): HttpClient {
  return {
    async request(url, init) {
      const { signal, release } = toAbortSignal(init.signal);
      let response: Response;
      try {
        response = await fetchImpl(url, {
          method: init.method,
          headers: init.headers,
          body: init.body,
          signal,
        });
      } catch (error) {
        release();
        throw error;
      }
      const stream = response.body;
      const reader = stream?.getReader();
      let finished = stream === null;
      // The link to init.signal stays while the body may still be read: an abort mid-body must reach fetch.
      const cancel = (): void => {
        if (finished || !reader) {
          release();
          return;
        }
        finished = true;
        release();
        reader.cancel().catch(() => undefined);
      };
      async function* chunks(): AsyncGenerator<Uint8Array, void, undefined> {
        if (!reader) {
          release();
          return;
        }
        try {
          for (;;) {
            const result = await reader.read();
            if (result.done) {
              finished = true;
              return;
            }
            yield result.value;
          }
        } finally {
          cancel();
          reader.releaseLock();
        }
      }
      return {
        status: response.status,
        statusText: response.statusText,
        header: (name) => response.headers.get(name) ?? undefined,
        body: chunks(),
        cancel,
        discard: cancel,
      };
    },
  };
}
