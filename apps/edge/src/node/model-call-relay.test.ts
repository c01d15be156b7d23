import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { systemClock, type Clock } from '../clock.js';
import type { Envelope } from '@iop/wire';
import { createHttpServer } from '../http/http-server.js';
import { createHostGuard, guardRequests } from '../http/host-guard.js';
import { modelCallOf } from '../http/model-call-socket.js';
import { silentLogger } from '../logging.js';
import { ModelCallRelay, type ModelCallTermination } from './model-call-relay.js';

/** Frames the relay sent towards the node. */
class SentFrames {
  readonly frames: Envelope[] = [];
  send = (message: Envelope): Promise<void> => {
    this.frames.push(message);
    return Promise.resolve();
  };

  closes(callId: string): string[] {
    return this.frames.flatMap((frame) =>
      frame.msg?.$case === 'modelCallClose' && frame.msg.modelCallClose.callId === callId
        ? [frame.msg.modelCallClose.reason]
        : [],
    );
  }

  data(callId: string): Buffer[] {
    return this.frames.flatMap((frame) =>
      frame.msg?.$case === 'modelCallData' && frame.msg.modelCallData.callId === callId
        ? [Buffer.from(frame.msg.modelCallData.data)]
        : [],
    );
  }

  text(callId: string): string {
    return Buffer.concat(this.data(callId)).toString('utf8');
  }
}

const servers: ReturnType<typeof createHttpServer>[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** The listener's server as the OpenAI surface builds it (host guard in front), with `handler` as the app. */
function listener(handler: (request: IncomingMessage, response: ServerResponse) => void) {
  const guard = createHostGuard({ listen: '127.0.0.1:18081' });
  const server = createHttpServer(guardRequests(guard, handler));
  servers.push(server);
  return server;
}

function relayFor(
  sent: SentFrames,
  termination: Partial<ModelCallTermination> & Pick<ModelCallTermination, 'server'>,
  nodeId = 'node-a',
  clock: Clock = systemClock,
) {
  return new ModelCallRelay({
    nodeId,
    termination: { confirmParent: () => true, ...termination },
    send: sent.send,
    logger: silentLogger,
    clock,
  });
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

const request = (body: string, host = '127.0.0.1:40123') =>
  Buffer.from(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );

describe('ModelCallRelay', () => {
  it('serves a call with the listener’s own server and handler and relays the answer back as data frames', async () => {
    const seen: { url: string | undefined; body: string; call: unknown }[] = [];
    const server = listener((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push({ url: req.url, body, call: modelCallOf(req.socket) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    const sent = new SentFrames();
    const relay = relayFor(sent, { server: () => (socket) => server.emit('connection', socket) });
    relay.open('c1', 'run-1');
    // The request in two frames, split inside the headers.
    const bytes = request('{"model":"m"}');
    relay.data('c1', bytes.subarray(0, 20));
    relay.data('c1', bytes.subarray(20));
    await eventually(() => expect(sent.text('c1')).toContain('{"ok":true}'));
    expect(sent.text('c1')).toMatch(/^HTTP\/1\.1 200 OK/);
    // The node-loopback Host is accepted on a model-call socket: the guard knows what it is.
    expect(seen).toEqual([
      {
        url: '/v1/chat/completions',
        body: '{"model":"m"}',
        call: { parentRunId: 'run-1', nodeId: 'node-a' },
      },
    ]);
    expect(relay.size).toBe(1);
    // The agent closed its connection: the server ends its side, the call is gone.
    relay.close('c1', '');
    await eventually(() => expect(sent.closes('c1')).toEqual(['']));
    await eventually(() => expect(relay.size).toBe(0));
  });

  it('runs the idle timeout node:http sets on the call on the clock: an idle kept-alive call ends when it passes', async () => {
    const server = listener((_req, res) => res.writeHead(200).end('ok'));
    const sent = new SentFrames();
    const clock = new ManualClock();
    const relay = relayFor(
      sent,
      { server: () => (socket) => server.emit('connection', socket) },
      'node-a',
      clock,
    );
    relay.open('c1', 'run-1');
    relay.data('c1', request('{}'));
    await eventually(() => expect(sent.text('c1')).toContain('ok'));
    // Kept alive: one idle timer (node:http's for the listener's 5 s keep-alive timeout, plus its own margin).
    await eventually(() => expect(clock.pending).toBe(1));
    const [idleMs] = clock.pendingDelays();
    expect(idleMs).toBeGreaterThanOrEqual(5_000);
    clock.advance(idleMs - 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.closes('c1')).toEqual([]);
    clock.advance(1);
    await eventually(() => expect(sent.closes('c1')).toEqual(['']));
    await eventually(() => expect(relay.size).toBe(0));
    expect(clock.pending).toBe(0);
  });

  it('ends the call when the server closes the connection (Connection: close)', async () => {
    const server = listener((_req, res) => res.writeHead(200, { connection: 'close' }).end('bye'));
    const sent = new SentFrames();
    const relay = relayFor(sent, { server: () => (socket) => server.emit('connection', socket) });
    relay.open('c1', 'run-1');
    relay.data('c1', request('{}'));
    await eventually(() => expect(sent.closes('c1')).toEqual(['']));
    expect(sent.text('c1')).toContain('bye');
    await eventually(() => expect(relay.size).toBe(0));
  });

  it('cuts answers into frames of at most chunkBytes', async () => {
    const big = 'x'.repeat(10_000);
    const server = listener((_req, res) => res.writeHead(200).end(big));
    const sent = new SentFrames();
    const relay = relayFor(sent, {
      server: () => (socket) => server.emit('connection', socket),
      limits: { chunkBytes: 1024 },
    });
    relay.open('c1', 'run-1');
    relay.data('c1', request('{}'));
    await eventually(() => expect(sent.text('c1')).toContain(big));
    expect(Math.max(...sent.data('c1').map((chunk) => chunk.byteLength))).toBeLessThanOrEqual(1024);
    relay.closeAll();
  });

  it('refuses a call whose parent is not a live run on this link’s node', () => {
    const sent = new SentFrames();
    const asked: unknown[] = [];
    const refused: string[] = [];
    const relay = relayFor(
      sent,
      {
        server: () => () => {
          throw new Error('must not be served');
        },
        confirmParent: (parent) => {
          asked.push(parent);
          return parent.nodeId === 'node-b';
        },
        refused: (why) => refused.push(why),
      },
      'node-a',
    );
    relay.open('c1', 'run-on-node-b');
    expect(asked).toEqual([{ runId: 'run-on-node-b', nodeId: 'node-a' }]);
    expect(sent.closes('c1')).toEqual(['refused']);
    expect(refused).toEqual(['the parent is not a live run on this node']);
    expect(relay.size).toBe(0);
    // Data for a refused call is dropped.
    relay.data('c1', Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    expect(sent.data('c1')).toEqual([]);
  });

  it('refuses calls when no listener serves them, and over the per-parent and per-link bounds', () => {
    const sent = new SentFrames();
    expect(relayFor(sent, { server: () => undefined }).open('none', 'run-1')).toBeUndefined();
    expect(sent.closes('none')).toEqual(['refused']);

    const served: unknown[] = [];
    let refused = 0;
    const relay = relayFor(sent, {
      server: () => (socket) => served.push(socket),
      limits: { maxCallsPerParent: 2, maxCallsPerLink: 3 },
      refused: () => (refused += 1),
    });
    relay.open('p1', 'run-1');
    relay.open('p2', 'run-1');
    relay.open('p3', 'run-1');
    relay.open('q1', 'run-2');
    relay.open('q2', 'run-2');
    expect(served).toHaveLength(3);
    expect(sent.closes('p3')).toEqual(['refused']);
    expect(sent.closes('q2')).toEqual(['refused']);
    // A reused call id is refused too (the open one is kept).
    relay.open('p1', 'run-2');
    expect(sent.closes('p1')).toEqual(['refused']);
    expect(refused).toBe(3);
    relay.closeAll();
    expect(relay.size).toBe(0);
  });

  it('closes a call with overflow when the node sends more than the server reads', () => {
    const sent = new SentFrames();
    // A server that never reads the socket.
    const relay = relayFor(sent, { server: () => () => undefined, limits: { maxPendingBytes: 100 } });
    relay.open('c1', 'run-1');
    relay.data('c1', Buffer.alloc(60));
    relay.data('c1', Buffer.alloc(60));
    expect(sent.closes('c1')).toEqual(['overflow']);
  });

  it('destroys every call when the link ends, without sending on it', async () => {
    const server = listener(() => undefined);
    const sent = new SentFrames();
    const relay = relayFor(sent, { server: () => (socket) => server.emit('connection', socket) });
    relay.open('c1', 'run-1');
    relay.data('c1', request('{}'));
    relay.closeAll();
    expect(relay.size).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.closes('c1')).toEqual([]);
    // A later open on an ended link is ignored.
    relay.open('c2', 'run-1');
    expect(sent.closes('c2')).toEqual([]);
  });
});

describe('host guard and model-call sockets', () => {
  it('refuses the node-loopback Host on a network connection of the same listener', async () => {
    const server = listener((_req, res) => res.end('served'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    // Any Host not naming this listener: a model call's Host names the node's loopback port instead.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', headers: { host: '127.0.0.1:40123' } }, (response) => {
          response.resume();
          resolve(response.statusCode);
        })
        .on('error', reject);
    });
    expect(status).toBe(421);
  });
});
