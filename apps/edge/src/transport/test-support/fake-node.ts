// A hand-written node for transport tests: a real loopback socket speaking frames through FramedConnection.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import {
  envelope as build,
  FramedConnection,
  identityChannelBinding,
  PROTOCOL_VERSION,
  signIdentityProof,
  type Envelope,
  type EnvelopeKind,
  type RegisterResponse,
} from '@iop/wire';
import type { Logger } from '../../logging.js';
import { parseListenAddress } from '../../net/listen-address.js';

export interface FakeNodeOptions {
  nodeId: string;
  token: string;
  protocolVersion?: number;
  /** RegisterRequest.agent_kind (default '': an older node, taken as iop-node). */
  agentKind?: string;
  /** Answer the edge's pings (default true). */
  answerPings?: boolean;
  /** Connect with TLS, trusting this CA certificate. */
  tlsCa?: Buffer;
  /** An identity key pair: sent with the request, and the edge's challenge is answered with its signature. */
  identity?: { privateKey: KeyObject; publicKeySpki: Buffer };
  /** Answers the challenge with this signature instead (a forged proof). */
  forgedProof?: Buffer;
  /** Computes the proof from the challenge nonce instead (e.g. with a wrong channel binding). */
  signProof?: (nonce: Buffer) => Buffer;
}

export interface FakeNode {
  connection: FramedConnection;
  response: RegisterResponse;
  /** Frames received after the register response. */
  frames: Envelope[];
  waitFor(kind: EnvelopeKind, timeoutMs?: number): Promise<Envelope>;
  send(envelope: Envelope): Promise<void>;
  close(): Promise<void>;
  /** Destroys the socket without a Goodbye (a crashed node). */
  kill(): void;
  socket: net.Socket;
}

export async function connectTlsSocket(address: string, ca: Buffer): Promise<tls.TLSSocket> {
  const { host, port } = parseListenAddress(address);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host, port, ca, servername: 'localhost' }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

export async function connectSocket(address: string): Promise<net.Socket> {
  const { host, port } = parseListenAddress(address);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

export async function connectFakeNode(address: string, options: FakeNodeOptions): Promise<FakeNode> {
  const socket = options.tlsCa
    ? await connectTlsSocket(address, options.tlsCa)
    : await connectSocket(address);
  const connection = new FramedConnection(socket, { closeTimeoutMs: 200 });
  const frames: Envelope[] = [];
  const waiters: { kind: EnvelopeKind; resolve: (envelope: Envelope) => void }[] = [];
  await connection.send(
    build.registerRequest({
      nodeId: options.nodeId,
      token: options.token,
      agentVersion: '9.9.9',
      protocolVersion: options.protocolVersion ?? PROTOCOL_VERSION,
      os: 'linux',
      arch: 'x64',
      hostname: 'fake-host',
      supportedAdapters: ['cli'],
      agentKind: options.agentKind ?? '',
      ...(options.identity ? { identityPublicKey: options.identity.publicKeySpki } : {}),
    }),
  );
  const iterator = connection.messages()[Symbol.asyncIterator]();
  let first = await iterator.next();
  if (!first.done && first.value.msg?.$case === 'registerChallenge') {
    const { nonce } = first.value.msg.registerChallenge;
    const signature =
      options.forgedProof ??
      options.signProof?.(nonce) ??
      (options.identity
        ? signIdentityProof(
            options.identity.privateKey,
            options.nodeId,
            nonce,
            identityChannelBinding(connection),
          )
        : Buffer.alloc(0));
    await connection.send(build.registerProof(signature));
    first = await iterator.next();
  }
  if (first.done || first.value.msg?.$case !== 'registerResponse') {
    throw new Error(`expected a register response, got ${JSON.stringify(first.value)}`);
  }
  const response = first.value.msg.registerResponse;
  void (async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        const envelope = next.value;
        frames.push(envelope);
        if (envelope.msg?.$case === 'heartbeatPing' && options.answerPings !== false) {
          connection.send(build.heartbeatPong(envelope.msg.heartbeatPing.seq)).catch(() => undefined);
        }
        for (const waiter of [...waiters]) {
          if (envelope.msg?.$case === waiter.kind) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(envelope);
          }
        }
      }
    } catch {
      // connection errors surface through `connection.closed`
    }
  })();
  return {
    connection,
    response,
    frames,
    socket,
    waitFor(kind, timeoutMs = 3000) {
      const existing = frames.find((envelope) => envelope.msg?.$case === kind);
      if (existing) return Promise.resolve(existing);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${kind} within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          kind,
          resolve: (envelope) => {
            clearTimeout(timer);
            resolve(envelope);
          },
        });
      });
    },
    send: (envelope) => connection.send(envelope),
    close: () => connection.close('shutdown', { goodbye: true }),
    kill: () => socket.destroy(),
  };
}

/** A fresh Ed25519 identity for a fake node. */
export function fakeIdentity(): { privateKey: KeyObject; publicKeySpki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKeySpki: publicKey.export({ type: 'spki', format: 'der' }) };
}

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

/** A Logger that keeps every entry (child bindings merged in) for assertions. */
export function recordingLogger(
  entries: LogEntry[] = [],
  bindings: Record<string, unknown> = {},
): Logger & {
  entries: LogEntry[];
} {
  const log = (level: LogEntry['level']) => (fields: Record<string, unknown>, message: string) => {
    entries.push({ level, fields: { ...bindings, ...fields }, message });
  };
  return {
    entries,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: (more) => recordingLogger(entries, { ...bindings, ...more }),
  };
}

export async function waitUntil(
  condition: () => boolean,
  timeoutMs = 3000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
