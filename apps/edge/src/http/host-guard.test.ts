import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createHostGuard, guardRequests, urlAuthority } from './host-guard.js';

const loopback = { address: '127.0.0.1', port: 18081 };

describe('createHostGuard: Host', () => {
  it('accepts the loopback forms with the port on a loopback listener, nothing else', () => {
    const guard = createHostGuard({ listen: '127.0.0.1:18081' });
    for (const host of ['127.0.0.1:18081', 'localhost:18081', 'LOCALHOST:18081', '[::1]:18081']) {
      expect(guard.checkHost(host, loopback)).toBeUndefined();
    }
    for (const host of [
      'rebind.evil.example:18081',
      'rebind.evil.example',
      '127.0.0.1:18082',
      '127.0.0.1',
      'localhost',
      'user@127.0.0.1:18081',
      '127.0.0.1:18081/path',
      '',
    ]) {
      expect(guard.checkHost(host, loopback)).toMatchObject({ status: 421, code: 'host_not_allowed' });
    }
    expect(guard.checkHost(undefined, loopback)).toMatchObject({ status: 421 });
  });

  it('takes a Host without a port as 80, or 443 on a TLS listener', () => {
    expect(
      createHostGuard({ listen: '127.0.0.1:80' }).checkHost('localhost', { ...loopback, port: 80 }),
    ).toBe(undefined);
    const secure = createHostGuard({ listen: '127.0.0.1:443', secure: true });
    expect(secure.checkHost('localhost', { ...loopback, port: 443 })).toBeUndefined();
    expect(secure.checkHost('localhost', { ...loopback, port: 80 })).toBeDefined();
  });

  it('on a wildcard listener accepts the address the client dialed and this host name, not loopback names from afar', () => {
    const guard = createHostGuard({ listen: '0.0.0.0:19091', hostname: 'Edge-01' });
    const lan = { address: '192.0.2.10', port: 19091 };
    expect(guard.checkHost('192.0.2.10:19091', lan)).toBeUndefined();
    expect(guard.checkHost('edge-01:19091', lan)).toBeUndefined();
    expect(guard.checkHost('192.0.2.11:19091', lan)).toBeDefined();
    expect(guard.checkHost('localhost:19091', lan)).toBeDefined();
    expect(guard.checkHost('localhost:19091', { address: '::ffff:127.0.0.1', port: 19091 })).toBeUndefined();
    expect(guard.checkHost('evil.example:19091', lan)).toBeDefined();
    // The bound address itself, as a banner prints it.
    expect(guard.checkHost('0.0.0.0:19091', { address: '127.0.0.1', port: 19091 })).toBeUndefined();
  });

  it('accepts declared names: host on any port (a proxy), host:port on that port only', () => {
    const guard = createHostGuard({
      listen: '127.0.0.1:18081',
      names: ['api.example.com', 'edge.internal:8443', ...urlAuthority('https://a2a.example.com/a2a')],
    });
    expect(guard.checkHost('api.example.com', loopback)).toBeUndefined();
    expect(guard.checkHost('API.example.com.:443', loopback)).toBeUndefined();
    expect(guard.checkHost('edge.internal:8443', loopback)).toBeUndefined();
    expect(guard.checkHost('edge.internal:8444', loopback)).toBeDefined();
    expect(guard.checkHost('a2a.example.com', loopback)).toBeUndefined();
    expect(guard.checkHost('sub.api.example.com', loopback)).toBeDefined();
  });

  it('on a named listen host accepts that name and not the loopback forms', () => {
    const guard = createHostGuard({ listen: '192.0.2.10:18081' });
    const lan = { address: '192.0.2.10', port: 18081 };
    expect(guard.checkHost('192.0.2.10:18081', lan)).toBeUndefined();
    expect(guard.checkHost('localhost:18081', lan)).toBeDefined();
  });

  it('without a local address (gRPC) a wildcard listener knows its interface addresses', () => {
    const guard = createHostGuard({
      listen: '[::]:19093',
      hostname: 'edge-01',
      interfaces: () => ({
        eth0: [
          {
            address: '2001:db8::5',
            family: 'IPv6',
            internal: false,
            netmask: '',
            mac: '',
            cidr: null,
            scopeid: 0,
          },
        ],
      }),
    });
    expect(guard.checkHost('[2001:db8::5]:19093', { port: 19093 })).toBeUndefined();
    expect(guard.checkHost('[2001:db8::6]:19093', { port: 19093 })).toBeDefined();
    expect(guard.checkHost('localhost:19093', { port: 19093 })).toBeUndefined();
    expect(guard.checkHost('evil.example:19093', { port: 19093 })).toBeDefined();
  });

  it('takes the host of a public URL (any port) and ignores one no Host header could carry', () => {
    expect(urlAuthority('https://a2a.example.com:8443/a2a')).toEqual(['a2a.example.com']);
    expect(urlAuthority('http://[2001:db8::1]:19091')).toEqual(['[2001:db8::1]']);
    expect(urlAuthority('http://under_score.example')).toEqual([]);
    expect(urlAuthority('')).toEqual([]);
  });

  it('refuses to build with a malformed declared name', () => {
    expect(() => createHostGuard({ listen: '127.0.0.1:1', names: ['http://x/'] })).toThrow(RangeError);
  });
});

describe('createHostGuard: Origin', () => {
  const guard = createHostGuard({ listen: '127.0.0.1:19094', names: ['dash.example.com'] });
  const local = { address: '127.0.0.1', port: 19094 };

  it('accepts no Origin (not a browser) and this listener as origin', () => {
    expect(guard.checkOrigin(undefined, local)).toBeUndefined();
    expect(guard.checkOrigin('http://127.0.0.1:19094', local)).toBeUndefined();
    expect(guard.checkOrigin('http://localhost:19094', local)).toBeUndefined();
    expect(guard.checkOrigin('https://dash.example.com', local)).toBeUndefined();
  });

  it('refuses foreign, opaque and malformed origins with 403', () => {
    for (const origin of [
      'http://evil.example',
      'http://rebind.evil.example:19094',
      'http://127.0.0.1:19095',
      'null',
      'file://',
      'chrome-extension://abc',
      'not a url',
    ]) {
      expect(guard.checkOrigin(origin, local)).toMatchObject({ status: 403, code: 'origin_not_allowed' });
    }
  });
});

describe('createHostGuard: checkRequest on a keep-alive connection', () => {
  const guard = createHostGuard({ listen: '127.0.0.1:19096' });
  const socket = { localAddress: '127.0.0.1', localPort: 19096 };
  const request = (headers: http.IncomingHttpHeaders): http.IncomingMessage =>
    ({ socket, headers }) as unknown as http.IncomingMessage;

  it('remembers only an accepted Host/Origin pair: a changed one on the same socket is checked again', () => {
    expect(guard.checkRequest(request({ host: '127.0.0.1:19096' }))).toBeUndefined();
    expect(guard.checkRequest(request({ host: '127.0.0.1:19096' }))).toBeUndefined();
    expect(guard.checkRequest(request({ host: 'rebind.evil.example:19096' }))).toMatchObject({ status: 421 });
    expect(
      guard.checkRequest(request({ host: '127.0.0.1:19096', origin: 'http://evil.example' })),
    ).toMatchObject({ status: 403 });
    expect(guard.checkRequest(request({ host: '127.0.0.1:19096' }))).toBeUndefined();
    expect(guard.checkRequest(request({}))).toMatchObject({ status: 421 });
  });

  it('remembers an accepted combination across connections, keyed by the local endpoint, never a refusal', () => {
    // A wildcard listener: the verdict depends on the address the connection arrived on.
    const wildcard = createHostGuard({
      listen: '0.0.0.0:19097',
      hostname: 'edge-host',
      interfaces: () => ({}),
    });
    const on = (localAddress: string, headers: http.IncomingHttpHeaders): http.IncomingMessage =>
      ({ socket: { localAddress, localPort: 19097 }, headers }) as unknown as http.IncomingMessage;
    // A loopback Host is this listener for a connection that came in over loopback ...
    expect(wildcard.checkRequest(on('127.0.0.1', { host: 'localhost:19097' }))).toBeUndefined();
    expect(wildcard.checkRequest(on('127.0.0.1', { host: 'localhost:19097' }))).toBeUndefined();
    // ... and not, from the remembered verdict, for one on another interface with the same headers.
    expect(wildcard.checkRequest(on('10.0.0.5', { host: 'localhost:19097' }))).toMatchObject({ status: 421 });
    // An Origin is part of the combination: a new connection with a foreign one is checked (and refused) again.
    expect(
      wildcard.checkRequest(on('127.0.0.1', { host: 'localhost:19097', origin: 'http://evil.example' })),
    ).toMatchObject({ status: 403 });
    expect(
      wildcard.checkRequest(on('127.0.0.1', { host: 'localhost:19097', origin: 'http://evil.example' })),
    ).toMatchObject({ status: 403 });
    // An absent Origin is not an empty one.
    expect(wildcard.checkRequest(on('127.0.0.1', { host: 'localhost:19097', origin: '' }))).toMatchObject({
      status: 403,
    });
  });
});

describe('guardRequests', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  it('answers a refused request itself, before the handler reads anything, and closes the connection', async () => {
    let handled = 0;
    server = http.createServer(
      guardRequests(createHostGuard({ listen: '127.0.0.1:0' }), (_request, response) => {
        handled += 1;
        response.end('served');
      }),
    );
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const ask = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        const request = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers, setHost: false },
          (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (body += chunk));
            response.on('end', () =>
              resolve({ status: response.statusCode ?? 0, body, connection: response.headers.connection }),
            );
          },
        );
        request.on('error', reject);
        request.end('{"model":"m"}');
      });
    const refused = await ask({ host: `rebind.evil.example:${port}` });
    expect(refused.status).toBe(421);
    expect(refused.connection).toBe('close');
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        message: expect.stringContaining('rebind.evil.example'),
        type: 'invalid_request_error',
        code: 'host_not_allowed',
      },
    });
    expect((await ask({ host: `127.0.0.1:${port}`, origin: 'https://evil.example' })).status).toBe(403);
    expect(handled).toBe(0);
    expect(await ask({ host: `localhost:${port}` })).toMatchObject({ status: 200, body: 'served' });
    expect(handled).toBe(1);
  });
});
