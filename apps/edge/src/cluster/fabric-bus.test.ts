// The fabric bus over a real nats-server (skipped with one printed line when it is missing): requests, replies
// and KV values between buses with the same keyring open; a bus with another key, a plain NATS client, replays
// and NATS deletes are dropped, counted by reason and logged once per source per minute.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Kvm } from '@nats-io/kv';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { recordingLogger } from '../transport/test-support/fake-node.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import type { FabricBus, SealedKvEntry } from './fabric-bus.js';
import { keyringOf } from './fabric-keyring.js';
import type { RejectReason } from './fabric-sealer.js';

const available = natsServerAvailable('fabric bus tests');
const suite = available ? describe : describe.skip;
const text = (value: string) => new TextEncoder().encode(value);
const read = (value: Uint8Array) => new TextDecoder().decode(value);

/** An empty status message's headers, as the server sends for "no responders". */
function msgHeaders(code: number, description: string) {
  return natsHeaders(code, description);
}

function counter() {
  const counts = new Map<RejectReason, number>();
  return {
    counts,
    rejected: (reason: RejectReason) => counts.set(reason, (counts.get(reason) ?? 0) + 1),
  };
}

suite('fabric bus over NATS', () => {
  let nats: NatsServer;
  const buses: FabricBus[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const bus of buses.splice(0)) await bus.close();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  async function bus(edgeId: string, options: Parameters<typeof connectFabric>[2] = {}): Promise<FabricBus> {
    const created = await connectFabric(nats.url, edgeId, options);
    buses.push(created);
    return created;
  }

  it('answers a sealed request with a sealed reply naming its sender; another key gets no answer', async () => {
    const sink = counter();
    const logger = recordingLogger();
    const server = await bus('edge-1', { sink, logger });
    server.subscribe('iop.call.echo.edge-1', {
      bound: true,
      callback: (_error, msg) => {
        msg.respond(text(`${msg.sender}: ${read(msg.data)}`));
      },
    });
    await server.flush();
    const client = await bus('edge-2');
    const reply = await client.request('iop.call.echo.edge-1', text('hello'), {
      timeout: 2000,
      to: 'edge-1',
    });
    expect([read(reply.data), reply.sender]).toEqual(['edge-2: hello', 'edge-1']);

    const stranger = await bus('edge-9', { keyring: keyringOf([Buffer.alloc(32, 9)]) });
    for (let index = 0; index < 3; index++) {
      await expect(
        stranger.request('iop.call.echo.edge-1', text('x'), { timeout: 300, to: 'edge-1' }),
      ).rejects.toMatchObject({
        code: 'timeout',
      });
    }
    expect(sink.counts.get('unknown_key')).toBe(3);
    // Logged once for the source within the minute.
    expect(
      logger.entries.filter((entry) => entry.level === 'warn' && entry.fields.source === 'edge-9'),
    ).toHaveLength(1);
  });

  it('drops a request sealed for another boot of the receiver as a replay', async () => {
    const sink = counter();
    const server = await bus('edge-1', { sink, bootId: 'boot-2' });
    let served = 0;
    server.subscribe('iop.call.echo.edge-1', {
      bound: true,
      callback: (_error, msg) => {
        served += 1;
        msg.respond(msg.data);
      },
    });
    await server.flush();
    // The client still knows edge-1's earlier boot: nothing is served, the drop is counted as a replay.
    const stale = await bus('edge-2');
    await expect(
      stale.request('iop.call.echo.edge-1', text('x'), { timeout: 300, to: 'edge-1' }),
    ).rejects.toMatchObject({ code: 'timeout' });
    expect([served, sink.counts.get('replay')]).toEqual([0, 1]);
    const current = await bus('edge-3', { peerBoot: () => 'boot-2' });
    const reply = await current.request('iop.call.echo.edge-1', text('y'), { timeout: 2000, to: 'edge-1' });
    expect(read(reply.data)).toBe('y');
    // No boot id known for an edge: nothing is sent.
    const unknown = await bus('edge-4', { peerBoot: () => undefined });
    await expect(
      unknown.request('iop.call.echo.edge-1', text('z'), { timeout: 2000, to: 'edge-1' }),
    ).rejects.toMatchObject({ code: 'unknown_peer' });
    expect(() => unknown.publish('iop.cancel.edge-1', text('z'), { to: 'edge-1' })).toThrow('membership');
  });

  it('waits for a sealed answer through forged "no responders" statuses, until the timeout or the edge is gone', async () => {
    const client = await bus('edge-2');
    const outsider = await connect({ servers: nats.url });
    try {
      // The outsider answers every request with an empty 503, as the server does when nobody listens.
      outsider.subscribe('_INBOX.>', {
        callback: (_error, msg) => {
          const headers = msgHeaders(503, 'No Responders');
          outsider.publish(msg.subject, new Uint8Array(0), { headers });
        },
      });
      outsider.subscribe('iop.call.slow.edge-1', {
        callback: (_error, msg) => {
          if (msg.reply)
            outsider.publish(msg.reply, new Uint8Array(0), { headers: msgHeaders(503, 'No Responders') });
        },
      });
      await outsider.flush();
      const server = await bus('edge-1');
      server.subscribe('iop.call.slow.edge-1', {
        bound: true,
        callback: (_error, msg) => {
          setTimeout(() => msg.respond(text('late but sealed')), 300);
        },
      });
      await server.flush();
      const reply = await client.request('iop.call.slow.edge-1', text('x'), { timeout: 3000, to: 'edge-1' });
      expect(read(reply.data)).toBe('late but sealed');
      // Nobody answers edge-5: the request ends when the membership view says the edge is gone.
      const pending = client.request('iop.call.slow.edge-5', text('x'), { timeout: 10_000, to: 'edge-5' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      client.peerGone('edge-5');
      await expect(pending).rejects.toMatchObject({ code: 'gone' });
    } finally {
      await outsider.close();
    }
  });

  it('accepts either key of a rotated ring', async () => {
    const oldKey = Buffer.alloc(32, 1);
    const newKey = Buffer.alloc(32, 2);
    const server = await bus('edge-1', { keyring: keyringOf([oldKey, newKey]) });
    server.subscribe('iop.call.echo.edge-1', { callback: (_error, msg) => void msg.respond(msg.data) });
    await server.flush();
    const rotated = await bus('edge-2', { keyring: keyringOf([newKey, oldKey]) });
    const reply = await rotated.request('iop.call.echo.edge-1', text('new'), { timeout: 2000, to: 'edge-1' });
    expect(read(reply.data)).toBe('new');
  });

  it('opens KV values for their key only, ignores NATS deletes and replayed values, and writes tombstones', async () => {
    const sink = counter();
    const writer = await bus('edge-1');
    const reader = await bus('edge-2', { sink });
    const outsider = await connect({ servers: nats.url });
    try {
      const bucket = await new Kvm(outsider).create('iop_test', { history: 1, ttl: 60_000 });
      const sealedWriter = writer.kv(await new Kvm(outsider).open('iop_test'), 'iop_test', 60_000);
      const sealedReader = reader.kv(bucket, 'iop_test', 60_000);
      const seen: SealedKvEntry[] = [];
      const watch = await sealedReader.watch();
      void (async () => {
        for await (const entry of watch) seen.push(entry);
      })();
      await sealedWriter.put('a', text('one'));
      const captured = (await bucket.get('a'))?.value ?? new Uint8Array();
      await sealedWriter.put('a', text('two'));
      await bucket.put('b', captured); // moved to another key
      await bucket.put('a', captured); // replayed (older than what was accepted)
      await bucket.put('c', text('{"clear":true}'));
      await bucket.delete('a');
      await sealedWriter.delete('a');
      const deadline = Date.now() + 3000;
      while (seen.length < 3 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      watch.stop();
      expect(seen.map((entry) => [entry.key, entry.operation, read(entry.value), entry.sender])).toEqual([
        ['a', 'PUT', 'one', 'edge-1'],
        ['a', 'PUT', 'two', 'edge-1'],
        ['a', 'DEL', '', 'edge-1'],
      ]);
      expect(Object.fromEntries(sink.counts)).toEqual({
        auth_failed: 1,
        replay: 1,
        malformed: 1,
        unsealed: 1,
      });
      expect(await sealedReader.get('b')).toEqual({
        revision: expect.any(Number) as unknown,
        value: undefined,
      });
    } finally {
      await outsider.close();
    }
  });
});
