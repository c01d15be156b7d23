// The fabric bus over a real nats-server (skipped with one printed line when it is missing): requests, replies
// and KV values between buses with the same keyring open; a bus with another key, a plain NATS client, replays
// and NATS deletes are dropped, counted by reason and logged once per source per minute.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
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
      callback: (_error, msg) => {
        msg.respond(text(`${msg.sender}: ${read(msg.data)}`));
      },
    });
    await server.flush();
    const client = await bus('edge-2');
    const reply = await client.request('iop.call.echo.edge-1', text('hello'), { timeout: 2000 });
    expect([read(reply.data), reply.sender]).toEqual(['edge-2: hello', 'edge-1']);

    const stranger = await bus('edge-9', { keyring: keyringOf([Buffer.alloc(32, 9)]) });
    for (let index = 0; index < 3; index++) {
      await expect(
        stranger.request('iop.call.echo.edge-1', text('x'), { timeout: 300 }),
      ).rejects.toMatchObject({
        code: 'timeout',
      });
    }
    expect(sink.counts.get('unknown_key')).toBe(3);
    // Logged once for the source within the minute.
    expect(
      logger.entries.filter((entry) => entry.level === 'warn' && entry.fields.source === 'edge-9'),
    ).toHaveLength(1);
    await expect(client.request('iop.call.echo.nobody', text('x'), { timeout: 2000 })).rejects.toMatchObject({
      code: 'no_responders',
    });
  });

  it('accepts either key of a rotated ring', async () => {
    const oldKey = Buffer.alloc(32, 1);
    const newKey = Buffer.alloc(32, 2);
    const server = await bus('edge-1', { keyring: keyringOf([oldKey, newKey]) });
    server.subscribe('iop.call.echo.edge-1', { callback: (_error, msg) => void msg.respond(msg.data) });
    await server.flush();
    const rotated = await bus('edge-2', { keyring: keyringOf([newKey, oldKey]) });
    const reply = await rotated.request('iop.call.echo.edge-1', text('new'), { timeout: 2000 });
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
