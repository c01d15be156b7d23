#!/usr/bin/env node
// The simplest HTTP relay one process can be, for bench/floor.mjs: forwards every request to --target over a
// keep-alive agent and pipes the answer back chunk by chunk, with no parsing, checks or bookkeeping. Prints
// `RELAY_URL=<url>` once listening; stops on SIGTERM/SIGINT.
// Usage: plain-relay.mjs --target http://host:port
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { target: { type: 'string' } } });
if (!values.target) {
  process.stderr.write('usage: plain-relay.mjs --target http://host:port\n');
  process.exit(2);
}
const target = new URL(values.target);
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: request.url,
        method: request.method,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, {
          'content-type': answer.headers['content-type'] ?? 'application/octet-stream',
        });
        answer.on('data', (chunk) => response.write(chunk));
        answer.on('end', () => response.end());
      },
    );
    upstream.on('error', () => response.destroy());
    upstream.end(body);
  });
});
server.listen(0, '127.0.0.1', () =>
  process.stdout.write(`RELAY_URL=http://127.0.0.1:${server.address().port}\n`),
);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
