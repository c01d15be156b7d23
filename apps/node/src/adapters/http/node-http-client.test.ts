import { systemClock } from '@iop/clock';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { createNodeHttpClient, type NodeHttpClient } from './node-http-client.js';

/** A server answering every request with the raw headers and body it received. */
async function echoServer(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ rawHeaders: request.rawHeaders, body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function send(
  client: NodeHttpClient,
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ headers: [string, string][]; body: string }> {
  const response = await client.request(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    body,
    signal: new AbortController().signal,
  });
  const parts: Buffer[] = [];
  for await (const chunk of response.body) parts.push(Buffer.from(chunk));
  const echoed = JSON.parse(Buffer.concat(parts).toString('utf8')) as { rawHeaders: string[]; body: string };
  const pairs: [string, string][] = [];
  for (let index = 0; index < echoed.rawHeaders.length; index += 2)
    pairs.push([echoed.rawHeaders[index].toLowerCase(), echoed.rawHeaders[index + 1]]);
  return { headers: pairs, body: echoed.body };
}

describe('createNodeHttpClient request headers', () => {
  let server: Awaited<ReturnType<typeof echoServer>>;
  let client: NodeHttpClient;
  beforeEach(async () => {
    server = await echoServer();
    client = createNodeHttpClient({ clock: systemClock });
  });
  afterEach(async () => {
    client.close();
    await server.close();
  });

  it('sends Host, the given headers and the body length, each once', async () => {
    const echoed = await send(
      client,
      `http://${server.origin}/v1/chat`,
      { accept: 'text/event-stream' },
      '{"a":1}',
    );
    expect(echoed.body).toBe('{"a":1}');
    expect(echoed.headers).toEqual(
      expect.arrayContaining([
        ['host', server.origin],
        ['accept', 'text/event-stream'],
        ['content-length', '7'],
      ]),
    );
    const names = echoed.headers.map(([name]) => name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('keeps one header per name regardless of case, the last one given winning', async () => {
    const echoed = await send(client, `http://${server.origin}/`, {
      accept: 'application/json',
      'Content-Type': 'text/plain',
      Accept: 'text/event-stream',
      'content-type': 'application/json',
    });
    expect(echoed.headers.filter(([name]) => name === 'accept')).toEqual([['accept', 'text/event-stream']]);
    expect(echoed.headers.filter(([name]) => name === 'content-type')).toEqual([
      ['content-type', 'application/json'],
    ]);
  });

  it('turns credentials in the URL into Basic authorization unless a header gives one', async () => {
    const fromUrl = await send(client, `http://user%40x:p%3Ass@${server.origin}/`, {});
    expect(fromUrl.headers).toContainEqual([
      'authorization',
      `Basic ${Buffer.from('user@x:p:ss').toString('base64')}`,
    ]);
    const explicit = await send(client, `http://user:pass@${server.origin}/`, { Authorization: 'Bearer k' });
    expect(explicit.headers.filter(([name]) => name === 'authorization')).toEqual([
      ['authorization', 'Bearer k'],
    ]);
  });
});
