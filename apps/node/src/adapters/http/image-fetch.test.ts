import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { AddressCheck } from '@iop/config';
import { createImageFetcher, ImageByteBudget, ImageFetchError } from './image-fetch.js';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
/** The test's allow-list: loopback IPv4 only. */
const allowLoopback: AddressCheck = (address) => address === '127.0.0.1';

let server: http.Server;
let base: string;
const pending = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    switch (req.url ?? '') {
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
        res.end(PNG);
        return;
      case '/big-declared':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': 4096 });
        res.end(Buffer.alloc(4096));
        return;
      case '/big-chunked':
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        for (let i = 0; i < 8; i += 1) res.write(Buffer.alloc(512));
        res.end();
        return;
      case '/slow':
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(Buffer.alloc(8));
        pending.add(res); // never ends: the fetcher's deadline must
        return;
      case '/endless': {
        // Never ends on its own: only the fetcher stopping reads ends it.
        res.writeHead(200, { 'content-type': 'image/png' });
        const chunk = Buffer.alloc(64 * 1024);
        const more = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', more);
        more();
        pending.add(res);
        return;
      }
      case '/redirect':
        res.writeHead(302, { location: '/image.png' });
        res.end();
        return;
      case '/html':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html></html>');
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of pending) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function failure(promise: Promise<unknown>): Promise<ImageFetchError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ImageFetchError);
    return error as ImageFetchError;
  }
  throw new Error('the fetch succeeded');
}

describe('createImageFetcher', () => {
  it('fetches an image from an address the check allows, as base64', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback });
    const image = await fetchImage(`${base}/image.png`);
    expect(image).toEqual({ base64: PNG.toString('base64'), contentType: 'image/png', bytes: PNG.length });
  });

  it('refuses loopback with the default check, before connecting', async () => {
    let connections = 0;
    server.on('connection', () => (connections += 1));
    const error = await failure(createImageFetcher()(`${base}/image.png`));
    expect(error.code).toBe('image_fetch_failed');
    expect(error.reason).toBe('blocked_address');
    expect(error.message).toContain('127.0.0.1');
    expect(connections).toBe(0);
  });

  it('refuses a name when any of its addresses is private, and connects to the checked address', async () => {
    const mixed = createImageFetcher({
      resolve: () =>
        Promise.resolve([
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ]),
    });
    expect((await failure(mixed('http://images.example/a.png'))).reason).toBe('blocked_address');
    // The name resolves to loopback (allowed here): the request reaches the test server under that name.
    const pinned = createImageFetcher({
      allowAddress: allowLoopback,
      resolve: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
    });
    const port = (server.address() as AddressInfo).port;
    const image = await pinned(`http://images.example:${port}/image.png`);
    expect(image.base64).toBe(PNG.toString('base64'));
  });

  it('refuses a body over the size limit, declared or streamed', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback, maxBytes: 1024 });
    expect((await failure(fetchImage(`${base}/big-declared`))).reason).toBe('too_large');
    expect((await failure(fetchImage(`${base}/big-chunked`))).reason).toBe('too_large');
  });

  it('charges every fetch of a run to its byte budget and refuses the one that passes it, naming the cap', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback });
    const budget = new ImageByteBudget(6000);
    // 4096 streamed bytes fit; the next 4096 (streamed, no content-length) pass 6000 on the way.
    expect((await fetchImage(`${base}/big-chunked`, undefined, budget)).bytes).toBe(4096);
    expect(budget.remaining).toBe(6000 - 4096);
    const streamed = await failure(fetchImage(`${base}/big-chunked`, undefined, budget));
    expect(streamed.reason).toBe('total_too_large');
    expect(streamed.message).toContain('6000 bytes allowed in total');
    // A declared length over what is left is refused before its body is read.
    const declared = await failure(fetchImage(`${base}/big-declared`, undefined, new ImageByteBudget(4000)));
    expect(declared.reason).toBe('total_too_large');
  });

  it('stops reading an endless body as soon as the run total passes the budget', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback, timeoutMs: 5000 });
    const started = Date.now();
    const error = await failure(fetchImage(`${base}/endless`, undefined, new ImageByteBudget(1024 * 1024)));
    expect(error.reason).toBe('total_too_large');
    expect(Date.now() - started).toBeLessThan(4000);
    expect(() => new ImageByteBudget(0)).toThrow(RangeError);
  });

  it('gives up at the time limit', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback, timeoutMs: 200 });
    const started = Date.now();
    const error = await failure(fetchImage(`${base}/slow`));
    expect(error.reason).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('does not follow redirects', async () => {
    const error = await failure(createImageFetcher({ allowAddress: allowLoopback })(`${base}/redirect`));
    expect(error.reason).toBe('redirect_refused');
  });

  it('refuses a response that is not an image', async () => {
    const error = await failure(createImageFetcher({ allowAddress: allowLoopback })(`${base}/html`));
    expect(error.reason).toBe('not_an_image');
    expect(error.message).toContain('text/html');
  });

  it('refuses other schemes, credentials and error statuses', async () => {
    const fetchImage = createImageFetcher({ allowAddress: allowLoopback });
    expect((await failure(fetchImage('file:///etc/passwd'))).reason).toBe('invalid_url');
    expect((await failure(fetchImage('not a url'))).reason).toBe('invalid_url');
    expect((await failure(fetchImage(`http://u:p@127.0.0.1/x.png`))).reason).toBe('invalid_url');
    expect((await failure(fetchImage(`${base}/missing`))).reason).toBe('http_status');
  });

  it('refuses out-of-range limits', () => {
    expect(() => createImageFetcher({ maxBytes: 0 })).toThrow(RangeError);
    expect(() => createImageFetcher({ timeoutMs: 10 * 60_000 })).toThrow(RangeError);
  });
});
