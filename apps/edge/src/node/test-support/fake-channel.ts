// A LinkChannel that records what the edge sends, for link and service tests.
import type { Envelope } from '@iop/wire';
import type { LinkChannel, NodeLinkInfo } from '../node-link.js';

export class FakeChannel implements LinkChannel {
  readonly sent: Envelope[] = [];
  closedWith: { reason: string; goodbye?: boolean | undefined } | undefined;
  failSends = false;
  private readonly sendListeners: ((envelope: Envelope) => void)[] = [];

  send(envelope: Envelope): Promise<void> {
    if (this.failSends) return Promise.reject(new Error('socket gone'));
    this.sent.push(envelope);
    for (const listener of this.sendListeners) listener(envelope);
    return Promise.resolve();
  }

  close(reason: string, options?: { goodbye?: boolean; detail?: string }): Promise<void> {
    this.closedWith = { reason, goodbye: options?.goodbye };
    return Promise.resolve();
  }

  /** Calls `listener` for every later send (lets a fake node answer requests). */
  onSend(listener: (envelope: Envelope) => void): void {
    this.sendListeners.push(listener);
  }

  ofKind<K extends NonNullable<Envelope['msg']>['$case']>(kind: K): Envelope[] {
    return this.sent.filter((envelope) => envelope.msg?.$case === kind);
  }
}

export function linkInfo(nodeId: string, overrides: Partial<NodeLinkInfo> = {}): NodeLinkInfo {
  return {
    nodeId,
    alias: nodeId,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    hostname: `${nodeId}-host`,
    remoteAddress: '127.0.0.1:50000',
    supportedAdapters: ['cli'],
    runKinds: [],
    connectedSinceUnixMs: 1_000,
    ...overrides,
  };
}
