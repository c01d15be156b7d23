// A fabric bus for tests: a real NATS connection to the test's nats-server, sealed with a fixed test keyring
// (or the one the test passes: a wrong key, a rotated ring).
import { connect } from '@nats-io/transport-node';
import { silentLogger, type Logger } from '../logging.js';
import { createFabricBus, type FabricBus, type RejectionSink } from '../cluster/fabric-bus.js';
import { keyringOf, type FabricKeyring } from '../cluster/fabric-keyring.js';
import { FabricSealer } from '../cluster/fabric-sealer.js';

/** The fabric key of every test edge (32 bytes; not a secret). */
export function testKeyring(fill = 7): FabricKeyring {
  return keyringOf([Buffer.alloc(32, fill)]);
}

export async function connectFabric(
  url: string,
  edgeId: string,
  options: { keyring?: FabricKeyring; now?: () => number; sink?: RejectionSink; logger?: Logger } = {},
): Promise<FabricBus> {
  const nc = await connect({ servers: url, noAsyncTraces: true });
  const now = options.now ?? (() => Date.now());
  return createFabricBus({
    nc,
    edgeId,
    sealer: new FabricSealer({ keyring: options.keyring ?? testKeyring(), sender: edgeId, now }),
    logger: options.logger ?? silentLogger,
    now,
    ...(options.sink ? { sink: options.sink } : {}),
  });
}
