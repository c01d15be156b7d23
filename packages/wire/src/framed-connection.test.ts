import { afterEach, describe, expect, it } from '@jest/globals';
import type net from 'node:net';
import { envelope } from './envelope.js';
import { WireError } from './errors.js';
import { FrameDecoder } from './frame-decoder.js';
import { encodeFrame } from './frame-encoder.js';
import { FramedConnection } from './framed-connection.js';
import type { Envelope } from './messages.js';
import { sampleEnvelopes } from './test-support/sample-envelopes.js';
import { seededRandom } from './test-support/seeded-random.js';
import { delay, socketPair, stateWithin, type SocketPair } from './test-support/socket-pair.js';
import type { WireLogger } from './wire-logger.js';

let pair: SocketPair | undefined;
const connections: FramedConnection[] = [];

afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close('test-end')));
  pair?.destroy();
  pair = undefined;
});

async function connected(
  options: ConstructorParameters<typeof FramedConnection>[1] = {},
  serverOptions: ConstructorParameters<typeof FramedConnection>[1] = options,
): Promise<{ client: FramedConnection; server: FramedConnection; sockets: SocketPair }> {
  pair = await socketPair();
  const client = new FramedConnection(pair.client, options);
  const server = new FramedConnection(pair.server, serverOptions);
  connections.push(client, server);
  return { client, server, sockets: pair };
}

async function collect(iterable: AsyncIterable<Envelope>, limit = 10_000): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for await (const message of iterable) {
    out.push(message);
    if (out.length >= limit) break;
  }
  return out;
}

async function expectRejectsWith(promise: Promise<unknown>, code: WireError['code']): Promise<WireError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).code).toBe(code);
    return error as WireError;
  }
  throw new Error(`expected rejection with ${code}`);
}

/** Reads everything a raw socket receives until it closes, decoded as frames. */
function rawFrames(socket: net.Socket): Promise<Envelope[]> {
  const decoder = new FrameDecoder();
  const out: Envelope[] = [];
  socket.on('data', (chunk: Buffer) => out.push(...decoder.push(chunk)));
  return new Promise((resolve) => socket.once('close', () => resolve(out)));
}

describe('FramedConnection', () => {
  it('carries every message kind both ways, in order', async () => {
    const { client, server } = await connected();
    const samples = Object.values(sampleEnvelopes);
    const received = collect(server.messages(), samples.length);
    const echoed = collect(client.messages(), samples.length);
    await Promise.all(samples.map((sample) => client.send(sample)));
    expect(await received).toEqual(samples);
    await Promise.all(samples.map((sample) => server.send(sample)));
    expect(await echoed).toEqual(samples);
  });

  it('writes the frames sent during one event-loop turn with one socket write', async () => {
    const { client, server, sockets } = await connected();
    // Count the stream's writes to the kernel (Writable's _write/_writev, which net.Socket implements).
    const socket = sockets.client as unknown as {
      _write: (...args: unknown[]) => void;
      _writev: (...args: unknown[]) => void;
    };
    let writes = 0;
    for (const method of ['_write', '_writev'] as const) {
      const original = socket[method].bind(socket);
      socket[method] = (...args: unknown[]) => {
        writes += 1;
        original(...args);
      };
    }
    const samples = Object.values(sampleEnvelopes).slice(0, 3);
    const received = collect(server.messages(), samples.length);
    // Three callbacks of one turn (immediates queued together), as three upstream reads would be.
    const sent = await new Promise<Promise<void>[]>((resolve) => {
      const sends: Promise<void>[] = [];
      for (const [index, sample] of samples.entries()) {
        setImmediate(() => {
          sends.push(client.send(sample));
          if (index === samples.length - 1) resolve(sends);
        });
      }
    });
    await Promise.all(sent);
    expect(writes).toBe(1);
    expect(await received).toEqual(samples);
  });

  it('reports the remote address as host:port', async () => {
    const { client, sockets } = await connected();
    expect(client.remoteAddress).toBe(`127.0.0.1:${sockets.server.localPort}`);
  });

  it('sends a Goodbye on close and the peer sees its reason', async () => {
    const { client, server } = await connected();
    const received = collect(server.messages());
    await client.send(envelope.heartbeatPing(1, 10));
    await client.close('replaced', { goodbye: true, detail: 'newer connection' });
    expect(await received).toEqual([
      envelope.heartbeatPing(1, 10),
      envelope.goodbye('replaced', 'newer connection'),
    ]);
    expect(await server.closed).toEqual({ reason: 'replaced', byPeer: true });
    expect(await client.closed).toEqual({ reason: 'replaced', byPeer: false });
  });

  it('reports peer-closed when the peer closes without a Goodbye', async () => {
    const { client, server } = await connected();
    const received = collect(server.messages());
    await client.close('shutdown');
    expect(await received).toEqual([]);
    expect(await server.closed).toEqual({ reason: 'peer-closed', byPeer: true });
  });

  it('flushes frames sent just before close() even without a Goodbye', async () => {
    const { client, server } = await connected();
    const received = collect(server.messages());
    const sent = client.send(envelope.heartbeatPing(1, 2));
    await client.close('shutdown');
    await sent;
    expect(await received).toEqual([envelope.heartbeatPing(1, 2)]);
  });

  it('makes close idempotent and rejects sends after close', async () => {
    const { client } = await connected();
    const first = client.close('shutdown', { goodbye: true });
    const second = client.close('other');
    expect(second).toBe(first);
    await first;
    expect((await client.closed).reason).toBe('shutdown');
    await expectRejectsWith(client.send(envelope.heartbeatPing(1)), 'connection_closed');
  });

  it('ends the local iterator when close() is called while it waits', async () => {
    const { client } = await connected();
    const iterating = collect(client.messages());
    await delay(10);
    await client.close('shutdown');
    expect(await iterating).toEqual([]);
  });

  it('allows a single consumer', async () => {
    const { client } = await connected();
    client.messages();
    expect(() => client.messages()).toThrow(/single consumer/);
  });

  it('makes send() wait while a slow reader leaves the socket congested, without unbounded buffering', async () => {
    const { client, server, sockets } = await connected({}, { maxBufferedBytes: 64 * 1024 });
    const payload = 'x'.repeat(256 * 1024);
    const count = 64; // 16 MiB in total: far beyond what loopback socket buffers hold.
    const sends = Array.from({ length: count }, (_, index) =>
      client.send(envelope.goodbye(String(index), payload)),
    );
    // Nobody consumes server.messages(): the server pauses its socket and the kernel buffers fill up.
    await delay(300);
    expect(await stateWithin(sends[count - 1], 50)).toBe('pending');
    expect(sockets.server.isPaused()).toBe(true);
    // Frames wait in the connection's queue, not in the socket: the socket holds at most about one frame.
    expect(sockets.client.writableLength).toBeLessThanOrEqual(payload.length + 64 * 1024);

    const received = await collect(server.messages(), count);
    await Promise.all(sends);
    expect(
      received.map((message) => (message.msg?.$case === 'goodbye' ? message.msg.goodbye.reason : '?')),
    ).toEqual(Array.from({ length: count }, (_, index) => String(index)));
  });

  it('rejects sends still queued behind a congested socket when the connection closes', async () => {
    const { client, server } = await connected({ closeTimeoutMs: 200 }, { maxBufferedBytes: 64 * 1024 });
    const payload = 'x'.repeat(256 * 1024);
    const sends = Array.from({ length: 64 }, (_, index) =>
      client.send(envelope.goodbye(String(index), payload)),
    );
    const settled = Promise.allSettled(sends);
    await delay(200);
    expect(await stateWithin(sends[63], 20)).toBe('pending');
    const started = Date.now();
    await client.close('shutdown');
    expect(Date.now() - started).toBeLessThan(2000);
    const results = await settled;
    const rejected = results.filter((result) => result.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    for (const result of rejected) {
      expect((result.reason as WireError).code).toBe('connection_closed');
    }
    // Whatever was written first was written in order.
    expect(results.findIndex((result) => result.status === 'rejected')).toBe(
      results.length - rejected.length,
    );
    // The server never read its backlog (its consumer never started); closing it drops the backlog.
    await server.close('test-end');
  });

  it('rejects pending sends and throws from messages() when the peer resets the connection', async () => {
    const { client, server, sockets } = await connected();
    const iterating = collect(client.messages());
    await delay(10);
    sockets.server.resetAndDestroy();
    const error = await expectRejectsWith(iterating, 'connection_closed');
    expect(error.transient).toBe(true);
    const closed = await client.closed;
    expect(closed).toMatchObject({ reason: 'connection_closed', byPeer: true });
    expect(closed.error?.code).toBe('connection_closed');
    await expectRejectsWith(client.send(envelope.heartbeatPing(2)), 'connection_closed');
    await server.closed;
  });

  it('closes the connection with frame_too_large when the peer announces an oversize frame', async () => {
    pair = await socketPair();
    const server = new FramedConnection(pair.server, { maxFrameBytes: 1024 });
    connections.push(server);
    const seenByPeer = rawFrames(pair.client);
    const iterating = collect(server.messages());
    const header = Buffer.alloc(4);
    header.writeUInt32BE(10 * 1024 * 1024);
    pair.client.write(header);
    const error = await expectRejectsWith(iterating, 'frame_too_large');
    expect(await server.closed).toEqual({ reason: 'frame_too_large', error, byPeer: false });
    // The peer is told why before the socket closes.
    const frames = await seenByPeer;
    expect(frames).toHaveLength(1);
    expect(frames[0].msg).toMatchObject({ $case: 'goodbye', goodbye: { reason: 'frame_too_large' } });
  });

  it('delivers the envelopes before a malformed frame, then throws malformed_frame', async () => {
    pair = await socketPair();
    const server = new FramedConnection(pair.server);
    connections.push(server);
    const received: Envelope[] = [];
    const iterating = (async () => {
      for await (const message of server.messages()) received.push(message);
    })();
    pair.client.resume(); // read the Goodbye and the FIN so the close completes without the timeout
    const ping = encodeFrame(envelope.heartbeatPing(1, 2));
    pair.client.write(Buffer.concat([ping, ping, Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff])]));
    await expectRejectsWith(iterating, 'malformed_frame');
    expect(received).toEqual([envelope.heartbeatPing(1, 2), envelope.heartbeatPing(1, 2)]);
  });

  it('throws truncated_frame when the peer ends the stream inside a frame', async () => {
    pair = await socketPair();
    const server = new FramedConnection(pair.server);
    connections.push(server);
    const iterating = collect(server.messages());
    const frame = encodeFrame(sampleEnvelopes.runRequest);
    pair.client.end(frame.subarray(0, frame.length - 5));
    await expectRejectsWith(iterating, 'truncated_frame');
    expect((await server.closed).reason).toBe('truncated_frame');
  });

  it('skips an envelope of an unknown kind with a warning and keeps the connection', async () => {
    pair = await socketPair();
    const warnings: string[] = [];
    const logger: WireLogger = { debug: () => undefined, warn: (_fields, message) => warnings.push(message) };
    const server = new FramedConnection(pair.server, { logger });
    connections.push(server);
    const received = collect(server.messages(), 1);
    const unknownPayload = Buffer.from([0xc2, 0x02, 0x02, 0x08, 0x01]);
    pair.client.write(Buffer.concat([Buffer.from([0, 0, 0, unknownPayload.length]), unknownPayload]));
    pair.client.write(encodeFrame(envelope.heartbeatPong(3, 4)));
    expect(await received).toEqual([envelope.heartbeatPong(3, 4)]);
    expect(warnings).toEqual([expect.stringMatching(/unknown message kind/)]);
  });

  it('destroys the socket when the peer does not finish closing in time', async () => {
    pair = await socketPair({ serverAllowHalfOpen: true });
    // The server side is a raw half-open socket that never ends its side.
    pair.server.on('data', () => undefined);
    const client = new FramedConnection(pair.client, { closeTimeoutMs: 150 });
    connections.push(client);
    const started = Date.now();
    await client.close('shutdown', { goodbye: true });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(100);
    expect(elapsed).toBeLessThan(1000);
    expect(pair.client.destroyed).toBe(true);
  });

  it('rejects an envelope over maxFrameBytes locally and stays open', async () => {
    const { client, server } = await connected({ maxFrameBytes: 1024 });
    await expectRejectsWith(client.send(envelope.goodbye('x', 'y'.repeat(2000))), 'frame_too_large');
    const received = collect(server.messages(), 1);
    await client.send(envelope.heartbeatPing(5, 6));
    expect(await received).toEqual([envelope.heartbeatPing(5, 6)]);
  });

  it('validates its options before touching the socket', async () => {
    pair = await socketPair();
    const socket = pair.client;
    expect(() => new FramedConnection(socket, { maxBufferedBytes: 0 })).toThrow(RangeError);
    expect(() => new FramedConnection(socket, { closeTimeoutMs: -1 })).toThrow(RangeError);
    expect(() => new FramedConnection(socket, { maxFrameBytes: 2 ** 33 })).toThrow(RangeError);
    expect(socket.listenerCount('data')).toBe(0);
  });

  it('ends every connection fed random bytes with a typed outcome and a closed socket (seeded)', async () => {
    const random = seededRandom(4242);
    const valid = encodeFrame(sampleEnvelopes.runEvent);
    for (let round = 0; round < 40; round += 1) {
      const sockets = await socketPair();
      pair = sockets;
      const server = new FramedConnection(sockets.server, { maxFrameBytes: 4096, closeTimeoutMs: 200 });
      sockets.client.resume();
      const bytes = Buffer.concat([
        valid,
        Buffer.from(Array.from({ length: 1 + random.int(64) }, () => random.int(256))),
      ]);
      let outcome: unknown = 'ended';
      const reading = (async () => {
        try {
          for await (const _message of server.messages()) {
            // Only the leading valid frame (or frames that decode by chance) arrive here.
          }
        } catch (error) {
          outcome = error;
        }
      })();
      sockets.client.end(bytes);
      await reading;
      const closed = await server.closed;
      if (outcome !== 'ended') {
        expect(outcome).toBeInstanceOf(WireError);
        expect(closed.error).toBe(outcome);
      }
      expect(sockets.server.destroyed).toBe(true);
      sockets.destroy();
      pair = undefined;
    }
  });

  it('resolves closed for a socket that is already destroyed', async () => {
    pair = await socketPair();
    pair.client.destroy();
    const client = new FramedConnection(pair.client);
    expect(await client.closed).toMatchObject({ byPeer: true });
    await expectRejectsWith(client.send(envelope.heartbeatPing(1)), 'connection_closed');
  });
});
