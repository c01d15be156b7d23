// One delivery attempt against a real webhook server on 127.0.0.1: headers, what each answer means, the time
// bound and the bound on what is read of the answer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../clock.js';
import { createPushSender, type PushRequest } from './push-sender.js';

let server: http.Server;
let base: string;
const seen: http.IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = http.createServer((request, response) => {
    seen.push(request.headers);
    request.resume();
    request.on('end', () => {
      switch (request.url ?? '') {
        case '/ok':
          response.writeHead(204).end();
          return;
        case '/redirect':
          response.writeHead(302, { location: 'http://169.254.169.254/' }).end();
          return;
        case '/busy':
          response.writeHead(503).end();
          return;
        case '/gone':
          response.writeHead(404).end();
          return;
        case '/huge':
          response.writeHead(200);
          response.end(Buffer.alloc(1024 * 1024, 'x'));
          return;
        default:
          // /hang: never answers
          return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const send = createPushSender({ clock: systemClock, timeoutMs: 300, userAgent: 'iop-edge/test' });

function request(pathname: string): PushRequest {
  return {
    target: { url: new URL(`${base}${pathname}`), address: { address: '127.0.0.1', family: 4 } },
    contentType: 'application/a2a+json',
    body: '{"task":{"id":"t1"}}',
    token: 'tok',
    authentication: { scheme: 'Bearer', credentials: 'cred' },
  };
}

describe('push sender', () => {
  it('POSTs with the token and Authorization headers; a 2xx is delivered', async () => {
    expect(await send(request('/ok'))).toEqual({ kind: 'delivered', status: 204 });
    expect(seen.at(-1)).toMatchObject({
      'x-a2a-notification-token': 'tok',
      authorization: 'Bearer cred',
      'content-type': 'application/a2a+json',
    });
  });

  it('does not follow a redirect and gives up on a 4xx, retries a 5xx', async () => {
    expect((await send(request('/redirect'))).kind).toBe('rejected');
    expect((await send(request('/gone'))).kind).toBe('rejected');
    expect((await send(request('/busy'))).kind).toBe('retry');
  });

  it('bounds the time of an attempt and what it reads of the answer', async () => {
    const started = Date.now();
    expect(await send(request('/hang'))).toMatchObject({ kind: 'retry' });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect((await send(request('/huge'))).kind).toBe('delivered');
  });
});
