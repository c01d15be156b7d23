// Registration with node identity keys, over a real loopback TLS listener: the first proof records the key, a
// copy of the token with another key (or none, or a forged proof) is refused with identity_mismatch while the
// connected node stays connected, and a token rotation resets the identity.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { identityFingerprint, RegisterRejectCode, signIdentityProof } from '@iop/wire';
import { createEventBus, type ClosableEventBus } from '../events/event-bus.js';
import type { EdgeTransport } from '../transport/edge-transport.js';
import {
  connectFakeNode,
  fakeIdentity,
  recordingLogger,
  waitUntil,
  type FakeNodeOptions,
} from '../transport/test-support/fake-node.js';
import { createNodeRegistry, type NodeRegistry } from './node-registry.js';
import { createNodeStore, type NodeStore } from './node-store.js';
import { startNodeTransport } from './node-transport.js';
import { testEdgeConfig } from './test-support/config-fixture.js';

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../transport/test-support/tls');
let dataDir: string;
let transport: EdgeTransport | undefined;
let bus: ClosableEventBus | undefined;
let registry: NodeRegistry;
let store: NodeStore;
let token: string;
let ca: Buffer | undefined;

async function start(useTls: boolean): Promise<string> {
  const config = testEdgeConfig({
    edge: {
      data_dir: dataDir,
      register_timeout_ms: 2000,
      ...(useTls
        ? {
            tls: {
              enabled: true,
              cert_file: path.join(tlsDir, 'cert.pem'),
              key_file: path.join(tlsDir, 'key.pem'),
            },
          }
        : {}),
    },
  });
  store = createNodeStore({ dataDir, configNodes: config.nodes });
  token = (await store.register('test-node')).token;
  registry = createNodeRegistry();
  bus = createEventBus({ replaySize: 10, queueSize: 10 });
  ca = useTls ? await readFile(path.join(tlsDir, 'cert.pem')) : undefined;
  transport = await startNodeTransport({
    config,
    store,
    registry,
    events: bus,
    logger: recordingLogger(),
    closeTimeoutMs: 200,
    tokenCheckIntervalMs: 50,
  });
  return transport.address;
}

function node(address: string, options: Partial<FakeNodeOptions> = {}) {
  return connectFakeNode(address, {
    nodeId: 'test-node',
    token,
    ...(ca ? { tlsCa: ca } : {}),
    ...options,
  });
}

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'iop-node-identity-'));
});

afterEach(async () => {
  await transport?.stop();
  transport = undefined;
  bus?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe.each([
  ['TLS', true],
  ['plaintext', false],
])('node identity at registration (%s)', (_name, useTls) => {
  it('records the first key and refuses the token with another key; the connected node stays', async () => {
    const address = await start(useTls);
    const real = fakeIdentity();
    const first = await node(address, { identity: real });
    expect(first.response.accepted).toBe(true);
    expect(first.response.identityFingerprint).toBe(identityFingerprint(real.publicKeySpki));
    const link = registry.get('test-node');
    expect(link?.summary().identityFingerprint).toBe(identityFingerprint(real.publicKeySpki));

    const impostor = await node(address, { identity: fakeIdentity() });
    expect(impostor.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
    });
    expect(impostor.response.reason).toContain(identityFingerprint(real.publicKeySpki));
    expect(impostor.response.reason).toContain('iop-edge node register test-node');
    expect(registry.get('test-node')).toBe(link);
    expect(link?.closed).toBe(false);

    // The real node with its key reconnects as before (it replaces its own older connection).
    const again = await node(address, { identity: real });
    expect(again.response.accepted).toBe(true);
  });

  it('refuses an agent without identity support once a key is on record, and accepts one before', async () => {
    const address = await start(useTls);
    const legacy = await node(address);
    expect(legacy.response).toMatchObject({ accepted: true, identityFingerprint: '' });
    await legacy.close();
    const real = await node(address, { identity: fakeIdentity() });
    expect(real.response.accepted).toBe(true);
    const refused = await node(address);
    expect(refused.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
    });
    expect(refused.response.reason).toContain('no identity support');
    expect(registry.get('test-node')?.closed).toBe(false);
  });

  it('refuses a proof that does not verify, and records nothing for it', async () => {
    const address = await start(useTls);
    const claimed = fakeIdentity();
    const forged = await node(address, { identity: claimed, forgedProof: Buffer.alloc(64, 7) });
    expect(forged.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
    });
    expect(registry.get('test-node')).toBeUndefined();
    // Nothing was recorded: a real key still registers first.
    const real = await node(address, { identity: fakeIdentity() });
    expect(real.response.accepted).toBe(true);
  });

  it('resets the identity when the token is rotated (a re-install)', async () => {
    const address = await start(useTls);
    const old = await node(address, { identity: fakeIdentity() });
    expect(old.response.accepted).toBe(true);
    token = (await store.register('test-node')).token;
    // The rotated-out connection is cut off by the live token check.
    await waitUntil(() => registry.get('test-node') === undefined, 3000, 'old node cut off');
    const reinstalled = fakeIdentity();
    const fresh = await node(address, { identity: reinstalled });
    expect(fresh.response).toMatchObject({
      accepted: true,
      identityFingerprint: identityFingerprint(reinstalled.publicKeySpki),
    });
  });
});

describe('node identity proof binding', () => {
  it('refuses over TLS a signature made without this TLS session (a proof relayed from elsewhere)', async () => {
    const address = await start(true);
    const identity = fakeIdentity();
    // A valid signature by the right key, but over the plaintext binding: what a proof for another session is.
    let captured: Buffer | undefined;
    const relayed = await connectFakeNode(address, {
      nodeId: 'test-node',
      token,
      tlsCa: ca,
      identity,
      signProof: (nonce) => {
        captured = signIdentityProof(identity.privateKey, 'test-node', nonce, Buffer.alloc(0));
        return captured;
      },
    });
    expect(captured).toBeDefined();
    expect(relayed.response).toMatchObject({
      accepted: false,
      rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_IDENTITY_MISMATCH,
    });
  });
});
