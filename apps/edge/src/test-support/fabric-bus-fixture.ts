// A fabric bus for tests: a real NATS connection to the test's nats-server, sealed with a fixed test keyring
// (or the one the test passes: a wrong key, a rotated ring). Each test edge's boot id is `boot-<edge id>` unless the
// test says otherwise, and every test bus knows every other's (as a sealed membership view would).
import { connect } from '@nats-io/transport-node';
import { systemClock } from '../clock.js';
import { silentLogger, type Logger } from '../logging.js';
import { createFabricBus, type FabricBus, type RejectionSink } from '../cluster/fabric-bus.js';
import { keyringOf, type FabricKeyring } from '../cluster/fabric-keyring.js';
import { FabricSealer } from '../cluster/fabric-sealer.js';

/** The fabric key of every test edge (32 bytes; not a secret). */
export function testKeyring(fill = 7): FabricKeyring {
  return keyringOf([Buffer.alloc(32, fill)]);
}

/** A test edge's boot id. */
export function testBootId(edgeId: string): string {
  return `boot-${edgeId}`;
}

export async function connectFabric(
  url: string,
  edgeId: string,
  options: {
    keyring?: FabricKeyring;
    now?: () => number;
    sink?: RejectionSink;
    logger?: Logger;
    bootId?: string;
    peerBoot?: (edgeId: string) => string | undefined;
  } = {},
): Promise<FabricBus> {
  const nc = await connect({ servers: url, noAsyncTraces: true });
  const now = options.now ?? (() => Date.now());
  return createFabricBus({
    nc,
    edgeId,
    sealer: new FabricSealer({ keyring: options.keyring ?? testKeyring(), sender: edgeId, now }),
    logger: options.logger ?? silentLogger,
    clock: { ...systemClock, now },
    bootId: options.bootId ?? testBootId(edgeId),
    peerBoot: options.peerBoot ?? testBootId,
    ...(options.sink ? { sink: options.sink } : {}),
  });
}
