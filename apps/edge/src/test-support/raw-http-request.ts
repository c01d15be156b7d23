// One HTTP request with exactly the given headers, Host included (fetch and the openai SDK always send the Host of
// the URL they dial, so a DNS-rebinding request — the right socket, a foreign name — needs node:http with
// setHost: false). Test support for the Host / Origin guard of every listener.
import http from 'node:http';

export interface RawHttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function rawHttpRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawHttpAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method, path, headers, setHost: false, agent: false, timeout: 10_000 },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
        );
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer from 127.0.0.1:${port} in 10 s`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** The port of `http://host:port/...`, `host:port` or `[v6]:port (...)`. */
export function portOf(address: string): number {
  const match = /:(\d+)(?:[/\s]|$)/.exec(address.replace(/^https?:\/\//, ''));
  return Number(match?.[1] ?? 0);
}
