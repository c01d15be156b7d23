// Cause codes of real failures: the node's own client and an UpstreamExchange against loopback servers that
// refuse, answer 404, speak plain HTTP to a TLS client, stay silent, or answer garbage.
import { systemClock } from '@iop/clock';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { failureCause } from './failure-cause.js';
import { createNodeHttpClient } from './node-http-client.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';
import { UpstreamExchange } from './upstream-exchange.js';

const client = createNodeHttpClient({ clock: systemClock });
let plain: http.Server;
let silent: net.Server;
let garbage: net.Server;
/** Every accepted connection, destroyed at the end so the servers close at once. */
const accepted = new Set<net.Socket>();
let closedPort = 0;

const portOf = (server: net.Server): number => (server.address() as AddressInfo).port;
const listen = (server: net.Server): Promise<void> => {
  server.on('connection', (socket: net.Socket) => {
    accepted.add(socket);
    socket.on('close', () => accepted.delete(socket));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
};

beforeAll(async () => {
  plain = http.createServer((_request, response) => {
    response.statusCode = 404;
    response.end('{"error":"not found"}');
  });
  await listen(plain);
  silent = net.createServer(() => undefined);
  await listen(silent);
  garbage = net.createServer((socket) => socket.end('SSH-2.0-OpenSSH_9.2\r\n\r\n'));
  await listen(garbage);
  // A port that was just free: nothing listens there.
  const probe = net.createServer();
  await listen(probe);
  closedPort = portOf(probe);
  await new Promise((resolve) => probe.close(resolve));
});

afterAll(async () => {
  client.close();
  for (const socket of accepted) socket.destroy();
  await Promise.all(
    [plain, silent, garbage].map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

/** The error an exchange of GET `url` fails with. */
async function failure(url: string, idleTimeoutMs = 2000): Promise<unknown> {
  const exchange = new UpstreamExchange({
    http: client,
    now: Date.now,
    clock: systemClock,
    signal: new AbortController().signal,
    idleTimeoutMs,
  });
  try {
    const response = await exchange.send(url, { method: 'GET', headers: {} });
    return await exchange.json(response);
  } catch (error) {
    return error;
  } finally {
    exchange.dispose();
  }
}

describe('failureCause', () => {
  it('a closed port is connection_refused', async () => {
    const error = await failure(`http://127.0.0.1:${closedPort}/api/tags`);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).message).toContain('ECONNREFUSED');
    expect(failureCause(error)).toBe('connection_refused');
  });

  it('an HTTP error status is http_status', async () => {
    const error = await failure(`http://127.0.0.1:${portOf(plain)}/v1/models`);
    expect(error).toMatchObject({ status: 404 });
    expect(failureCause(error)).toBe('http_status');
  });

  it('https to a plain HTTP server is tls', async () => {
    expect(failureCause(await failure(`https://127.0.0.1:${portOf(plain)}/v1/models`))).toBe('tls');
  });

  it('silence past the idle timeout is timeout', async () => {
    expect(failureCause(await failure(`http://127.0.0.1:${portOf(silent)}/api/tags`, 100))).toBe('timeout');
  });

  it('a response that is not HTTP is invalid_response', async () => {
    expect(failureCause(await failure(`http://127.0.0.1:${portOf(garbage)}/api/tags`))).toBe(
      'invalid_response',
    );
  });

  it('socket and DNS codes along a cause chain, cancellation, and anything else', () => {
    const wrapped = (code: string) =>
      new UpstreamError('upstream_unreachable', 'cannot reach', {
        retryable: true,
        cause: new Error('fetch failed', { cause: Object.assign(new Error(code), { code }) }),
      });
    expect(failureCause(wrapped('ENOTFOUND'))).toBe('dns');
    expect(failureCause(wrapped('ECONNRESET'))).toBe('connection_reset');
    expect(failureCause(wrapped('EHOSTUNREACH'))).toBe('host_unreachable');
    expect(failureCause(wrapped('DEPTH_ZERO_SELF_SIGNED_CERT'))).toBe('tls');
    expect(failureCause(wrapped('ERR_TLS_CERT_ALTNAME_INVALID'))).toBe('tls');
    // What Wine's socket layer reported before the keep-alive fix (issue 33): a socket error of no known kind.
    expect(failureCause(wrapped('UNKNOWN'))).toBe('network');
    // The same socket error as the client rejects with it (discovery sees it unwrapped).
    const raw = Object.assign(new Error('connect UNKNOWN 127.0.0.1:9'), {
      code: 'UNKNOWN',
      syscall: 'connect',
    });
    expect(failureCause(raw)).toBe('network');
    expect(failureCause(new UpstreamCancelled('node shutting down'))).toBe('cancelled');
    expect(failureCause(new Error('boom'))).toBe('error');
  });
});
