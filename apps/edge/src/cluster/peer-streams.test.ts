// Streams across edges over a real nats-server (skipped with one printed line when it is missing): the holder's
// items in order, its typed error, a reader that leaves (the holder stops), a holder that leaves the cluster,
// and a reader that falls behind.
import { systemClock } from '../clock.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { FabricBus } from './fabric-bus.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import {
  createPeerStreams,
  PeerStreamError,
  type PeerStreamHandler,
  type PeerStreams,
} from './peer-streams.js';

const available = natsServerAvailable('cluster peer-stream tests');
const suite = available ? describe : describe.skip;

let nats: NatsServer;
const connections: FabricBus[] = [];
const stops: (() => void)[] = [];

async function edge(
  edgeId: string,
  live: () => string[],
  options: { maxQueued?: number; livenessMs?: number } = {},
): Promise<PeerStreams> {
  const nc = await connectFabric(nats.url, edgeId);
  connections.push(nc);
  const streams = createPeerStreams({
    clock: systemClock,
    nc,
    edgeId,
    liveEdges: live,
    timeoutMs: 2000,
    ...options,
  });
  await nc.flush();
  return streams;
}

async function serve(streams: PeerStreams, handler: PeerStreamHandler): Promise<void> {
  stops.push(streams.serveStream('topic', handler));
  // The holder's subscription is on the server before anyone asks.
  for (const nc of connections) await nc.flush();
}

async function drain(items: AsyncIterable<unknown>): Promise<unknown[]> {
  const seen: unknown[] = [];
  for await (const item of items) seen.push(item);
  return seen;
}

function waitAbort(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

suite('peer streams over NATS', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop();
    for (const nc of connections.splice(0)) await nc.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('relays the holder’s items in order, its typed error, and nothing when no edge holds it', async () => {
    const holder = await edge('edge-a', () => ['edge-b']);
    const reader = await edge('edge-b', () => ['edge-a']);
    await serve(holder, (payload) => {
      const { id } = payload as { id: string };
      if (id === 'none') return undefined;
      if (id === 'denied') throw new PeerStreamError(-32002, 'not yours');
      return (async function* () {
        for (let index = 0; index < 5; index += 1) yield await Promise.resolve({ id, index });
        if (id === 'breaks') throw new PeerStreamError(-32603, 'broke after five');
      })();
    });
    const signal = new AbortController().signal;
    const items = await reader.open('topic', { id: 'ok' }, signal);
    expect(await drain(items as AsyncIterable<unknown>)).toEqual(
      [0, 1, 2, 3, 4].map((index) => ({ id: 'ok', index })),
    );
    expect(await reader.open('topic', { id: 'none' }, signal)).toBeUndefined();
    await expect(reader.open('topic', { id: 'denied' }, signal)).rejects.toMatchObject({ code: -32002 });
    const breaks = (await reader.open('topic', { id: 'breaks' }, signal)) as AsyncIterable<unknown>;
    const seen: unknown[] = [];
    await expect(
      (async () => {
        for await (const item of breaks) seen.push(item);
      })(),
    ).rejects.toThrow('broke after five');
    expect(seen).toHaveLength(5);
  });

  it('stops the holder when the reader leaves, and ends the stream when the holder leaves the cluster', async () => {
    let live = ['edge-a'];
    const holder = await edge('edge-a', () => ['edge-b']);
    const reader = await edge('edge-b', () => live, { livenessMs: 20 });
    const holderSignals: AbortSignal[] = [];
    await serve(holder, (_payload, signal) => {
      holderSignals.push(signal);
      return (async function* () {
        yield 'first';
        await waitAbort(signal);
      })();
    });
    const controller = new AbortController();
    const items = (await reader.open('topic', {}, controller.signal)) as AsyncIterable<unknown>;
    const iterator = items[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: 'first' });
    controller.abort();
    await waitAbort(holderSignals[0]);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });

    const second = (await reader.open('topic', {}, new AbortController().signal)) as AsyncIterable<unknown>;
    live = [];
    await expect(drain(second)).rejects.toThrow('edge edge-a, which held the stream, is gone');
  });

  it('ends a stream whose reader falls too far behind, and stops the holder', async () => {
    const holder = await edge('edge-a', () => ['edge-b']);
    const reader = await edge('edge-b', () => ['edge-a'], { maxQueued: 3 });
    const holderSignals: AbortSignal[] = [];
    await serve(holder, (_payload, signal) => {
      holderSignals.push(signal);
      return (async function* () {
        for (let index = 0; index < 10; index += 1) yield index;
        await waitAbort(signal);
      })();
    });
    const items = (await reader.open('topic', {}, new AbortController().signal)) as AsyncIterable<unknown>;
    await waitAbort(holderSignals[0]);
    await expect(drain(items)).rejects.toThrow('fell more than 3 items behind');
  });
});
