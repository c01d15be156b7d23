// The metrics listener (`metrics.listen`): GET /metrics (Prometheus), /healthz (the process is up) and /readyz
// (listeners up and config loaded, as reported by the injected readiness check).
import type http from 'node:http';
import { listenHttp, type HttpListener } from '../http/listen-http.js';
import { createHostGuard, guardRequests } from '../http/host-guard.js';
import type { EdgeMetrics } from './edge-metrics.js';

export interface Readiness {
  ready: boolean;
  /** Per check: true when satisfied (e.g. { transport: true, openai: true, config: true }). */
  checks: Record<string, boolean>;
}

export interface MetricsServerOptions {
  listen: string;
  /** `http.allowed_hosts`: names besides the listener's own addresses that Host may carry (a scraper's DNS name). */
  allowedHosts?: readonly string[];
  metrics: EdgeMetrics;
  readiness: () => Readiness;
}

export function createMetricsHandler(options: Omit<MetricsServerOptions, 'listen'>): http.RequestListener {
  return (request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response
        .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' })
        .end('method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics':
        options.metrics.render().then(
          ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
          (error: unknown) =>
            response
              .writeHead(500, { 'content-type': 'text/plain' })
              .end(`metrics failed: ${String(error)}\n`),
        );
        return;
      case '/healthz':
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}\n');
        return;
      case '/readyz': {
        const readiness = options.readiness();
        response
          .writeHead(readiness.ready ? 200 : 503, { 'content-type': 'application/json' })
          .end(
            `${JSON.stringify({ status: readiness.ready ? 'ready' : 'not_ready', checks: readiness.checks })}\n`,
          );
        return;
      }
      default:
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  };
}

export function startMetricsServer(options: MetricsServerOptions): Promise<HttpListener> {
  const guard = createHostGuard({ listen: options.listen, names: options.allowedHosts ?? [] });
  return listenHttp(options.listen, guardRequests(guard, createMetricsHandler(options)));
}
