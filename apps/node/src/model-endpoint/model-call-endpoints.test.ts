import net from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Envelope } from '@iop/wire';
import type { ModelEndpoint } from '../adapters/model-endpoint.js';
import { ModelCallEndpoints } from './model-call-endpoints.js';

const silent = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

class Link {
  readonly frames: Envelope[] = [];
  up = true;
  send = (message: Envelope): Promise<boolean> => {
    if (!this.up) return Promise.resolve(false);
    this.frames.push(message);
    return Promise.resolve(true);
  };

  kinds(): string[] {
    return this.frames.map((frame) => frame.msg?.$case ?? '');
  }

  opens(): { callId: string; parentRunId: string }[] {
    return this.frames.flatMap((frame) =>
      frame.msg?.$case === 'modelCallOpen' ? [frame.msg.modelCallOpen] : [],
    );
  }

  text(callId: string): string {
    return Buffer.concat(
      this.frames.flatMap((frame) =>
        frame.msg?.$case === 'modelCallData' && frame.msg.modelCallData.callId === callId
          ? [Buffer.from(frame.msg.modelCallData.data)]
          : [],
      ),
    ).toString();
  }

  closes(callId: string): string[] {
    return this.frames.flatMap((frame) =>
      frame.msg?.$case === 'modelCallClose' && frame.msg.modelCallClose.callId === callId
        ? [frame.msg.modelCallClose.reason]
        : [],
    );
  }
}

async function eventually(check: () => void, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

function connect(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** What a socket received until it ended. */
function received(socket: net.Socket): { text: string; ended: boolean; closed: boolean } {
  const state = { text: '', ended: false, closed: false };
  socket.on('data', (chunk: Buffer) => (state.text += chunk.toString()));
  socket.on('end', () => (state.ended = true));
  socket.on('close', () => (state.closed = true));
  socket.on('error', () => undefined);
  return state;
}

const opened: ModelEndpoint[] = [];
afterEach(() => {
  for (const endpoint of opened.splice(0)) endpoint.close();
});

async function openFor(endpoints: ModelCallEndpoints, runId = 'run-1'): Promise<ModelEndpoint> {
  const endpoint = await endpoints.open({ runId, apiKey: 'iop-run-secret', model: 'local' });
  opened.push(endpoint);
  return endpoint;
}

describe('ModelCallEndpoints', () => {
  it('listens on the loopback and gives the placeholder values', async () => {
    const endpoints = new ModelCallEndpoints({ send: new Link().send, logger: silent });
    const { values } = await openFor(endpoints);
    expect(values.modelBaseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(values.anthropicBaseUrl).toBe(values.modelBaseUrl.slice(0, -'/v1'.length));
    expect(values).toMatchObject({ apiKey: 'iop-run-secret', model: 'local' });
  });

  it('relays a connection as one model call both ways and ends it when the edge ends its side', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({ send: link.send, logger: silent, limits: { chunkBytes: 8 } });
    const endpoint = await openFor(endpoints);
    const socket = await connect(endpoint.values.modelBaseUrl);
    const state = received(socket);
    socket.write('GET /v1/models HTTP/1.1\r\n\r\n');
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const [{ callId, parentRunId }] = link.opens() as [{ callId: string; parentRunId: string }];
    expect(parentRunId).toBe('run-1');
    await eventually(() => expect(link.text(callId)).toBe('GET /v1/models HTTP/1.1\r\n\r\n'));
    // In frames of at most chunkBytes.
    for (const frame of link.frames) {
      if (frame.msg?.$case === 'modelCallData')
        expect(frame.msg.modelCallData.data.byteLength).toBeLessThanOrEqual(8);
    }
    endpoints.data(callId, Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}'));
    endpoints.close(callId, '');
    await eventually(() => expect(state.ended).toBe(true));
    expect(state.text).toBe('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
    await eventually(() => expect(endpoints.openCalls).toBe(0));
  });

  it('tells the edge when the agent closes its connection', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({ send: link.send, logger: silent });
    const endpoint = await openFor(endpoints);
    const socket = await connect(endpoint.values.modelBaseUrl);
    socket.end('x');
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const callId = link.opens()[0]?.callId ?? '';
    await eventually(() => expect(link.closes(callId)).toEqual(['']));
    expect(link.kinds()).toEqual(['modelCallOpen', 'modelCallData', 'modelCallClose']);
  });

  it('ends every open call with parent_ended when the run ends, and refuses connections after', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({ send: link.send, logger: silent });
    const endpoint = await openFor(endpoints);
    const socket = await connect(endpoint.values.modelBaseUrl);
    const state = received(socket);
    socket.write('POST');
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const callId = link.opens()[0]?.callId ?? '';
    endpoint.close();
    await eventually(() => expect(state.closed).toBe(true));
    expect(link.closes(callId)).toEqual(['parent_ended']);
    expect(endpoints.openCalls).toBe(0);
    await expect(connect(endpoint.values.modelBaseUrl)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('closes connections over the per-run bound at once', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({
      send: link.send,
      logger: silent,
      limits: { maxCallsPerRun: 1 },
    });
    const endpoint = await openFor(endpoints);
    await connect(endpoint.values.modelBaseUrl);
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const second = received(await connect(endpoint.values.modelBaseUrl));
    await eventually(() => expect(second.closed).toBe(true));
    expect(link.opens()).toHaveLength(1);
  });

  it('closes a call with overflow when the agent does not read what the edge sends', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({
      send: link.send,
      logger: silent,
      limits: { maxPendingBytes: 1024 },
    });
    const endpoint = await openFor(endpoints);
    const socket = await connect(endpoint.values.modelBaseUrl);
    socket.pause();
    socket.write('GET');
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const callId = link.opens()[0]?.callId ?? '';
    for (let index = 0; index < 64 && link.closes(callId).length === 0; index += 1) {
      endpoints.data(callId, Buffer.alloc(64 * 1024));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(link.closes(callId)).toEqual(['overflow']);
  });

  it('destroys every call without a frame when the link is lost', async () => {
    const link = new Link();
    const endpoints = new ModelCallEndpoints({ send: link.send, logger: silent });
    const endpoint = await openFor(endpoints);
    const state = received(await connect(endpoint.values.modelBaseUrl));
    await eventually(() => expect(link.opens()).toHaveLength(1));
    const callId = link.opens()[0]?.callId ?? '';
    link.up = false;
    endpoints.linkLost();
    await eventually(() => expect(state.closed).toBe(true));
    expect(link.closes(callId)).toEqual([]);
    expect(endpoints.openCalls).toBe(0);
  });
});
