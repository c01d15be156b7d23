// Issue 43: a run's image URLs cannot make the node hold more than the run's byte budget. The ollama adapter
// fetches 8 images of 16 MiB (streamed without a content-length, so only the running total can stop them) from a
// loopback image server; the run fails with image_fetch_failed naming the 64 MiB cap, Ollama is never asked, and
// the node's RSS (sampled while the run lasts) stays within 200 MiB of where it started.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFakeOllama, type FakeServer } from '@iop/testkit';
import { create } from '@iop/wire';

import {
  collect,
  httpInstance,
  terminalOf,
  testDeps,
  userRun,
} from '../http/test-support/http-adapter-fixtures.js';
import { createImageFetcher, DEFAULT_IMAGE_MAX_TOTAL_BYTES } from '../http/image-fetch.js';
import { createOllamaAdapter } from './ollama-adapter.js';

const MIB = 1024 * 1024;
const IMAGE_BYTES = 16 * MIB;
const never = new AbortController().signal;

let images: http.Server;
let imageBase: string;
let imageRequests = 0;
let ollama: FakeServer;

beforeAll(async () => {
  const image = Buffer.alloc(IMAGE_BYTES, 0x5a);
  images = http.createServer((_request, response) => {
    imageRequests += 1;
    response.writeHead(200, { 'content-type': 'image/png' });
    response.end(image);
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  ollama = await startFakeOllama();
});

afterAll(async () => {
  images.closeAllConnections();
  await new Promise<void>((resolve) => images.close(() => resolve()));
  await ollama.close();
});

describe('ollama adapter image byte budget', () => {
  it('fails a run whose 8 images of 16 MiB pass the 64 MiB total, holding under 200 MiB more RSS', async () => {
    const adapter = createOllamaAdapter(
      httpInstance('ollama', 'ollama-a', { baseUrl: `${ollama.url}/`, requestTimeoutMs: 20_000 }),
      testDeps({ fetchImage: createImageFetcher({ allowAddress: (address) => address === '127.0.0.1' }) }),
    );
    const urls = Array.from({ length: 8 }, (_, index) => `${imageBase}/${index}.png`);
    const run = userRun('llava', '', {
      fetchImageUrls: true,
      messages: [create.chatMessage({ role: 'user', content: 'compare', imageUrls: urls })],
    });
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 2);
    try {
      const parts = await collect(adapter.run(run, { signal: never }), 20_000);
      peak = Math.max(peak, process.memoryUsage().rss);
      const terminal = terminalOf(parts);
      expect(terminal).toMatchObject({ type: 'error', code: 'image_fetch_failed' });
      expect(terminal.type === 'error' ? terminal.message : '').toContain(
        `${DEFAULT_IMAGE_MAX_TOTAL_BYTES} bytes allowed in total`,
      );
    } finally {
      clearInterval(sampler);
      await adapter.close();
    }
    // Four images fit the budget exactly; the fifth passes it on its first bytes and nothing after it is asked.
    expect(imageRequests).toBe(5);
    expect(ollama.requests.filter((request) => request.path === '/api/chat')).toHaveLength(0);
    const growthMiB = (peak - baseline) / MIB;
    process.stdout.write(`image byte budget: node RSS grew by ${growthMiB.toFixed(1)} MiB at most\n`);
    expect(growthMiB).toBeLessThan(200);
  });
});
