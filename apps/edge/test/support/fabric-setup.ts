// The set-up most fabric e2e suites share: the fake Ollama and fake vLLM behind a node's two providers, a real
// node joined to the edge with the e2e fabric token, and the wait until the edge sees every provider ready.
import { startFakeOllama, startFakeOpenAI, type FakeBehavior, type FakeServer } from '@iop/testkit';
import type { AdminClient } from '../../src/admin/admin-client.js';
import {
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type NodeProcessOptions,
  type ProcessGroup,
  type TestProcess,
} from './e2e-processes.js';
import { FABRIC_TOKEN, OLLAMA_SERVED, VLLM_SERVED } from './fabric-config.js';

export interface FakeBackends {
  /** Serves OLLAMA_SERVED. */
  ollama: FakeServer;
  /** Serves VLLM_SERVED. */
  vllm: FakeServer;
}

/** Starts the fake Ollama and the fake vLLM, both with `behavior` (their served models are set here). */
export async function startFakeBackends(behavior: Partial<FakeBehavior> = {}): Promise<FakeBackends> {
  const ollama = await startFakeOllama({ behavior: { ...behavior, models: [OLLAMA_SERVED] } });
  const vllm = await startFakeOpenAI({ behavior: { ...behavior, models: [VLLM_SERVED] } });
  return { ollama, vllm };
}

export type FabricNodeOptions = Partial<Omit<NodeProcessOptions, 'edge'>>;

/**
 * Starts `iop-node run` (node `n1` unless named) against the edge's node transport with the e2e fabric token and
 * a data dir of its own.
 */
export async function startFabricNode(
  group: ProcessGroup,
  edge: EdgeProcess,
  options: FabricNodeOptions = {},
): Promise<TestProcess> {
  const nodeId = options.nodeId ?? 'n1';
  return startNodeProcess(group, {
    ...options,
    edge: edge.addresses.transport,
    nodeId,
    token: options.token ?? FABRIC_TOKEN,
    dataDir: options.dataDir ?? (await group.tempDir(`iop-e2e-${nodeId}-data-`)),
  });
}

/** Waits until every provider the edge lists is ready; `describe` tells the processes' output on a timeout. */
export function waitForProvidersReady(
  admin: AdminClient,
  describe: () => string,
  timeoutMs = 30_000,
): Promise<void> {
  return waitUntil(
    async () => (await admin.listProviders()).every((entry) => entry.status === 'ready'),
    timeoutMs,
    () => `providers ready\n${describe()}`,
  );
}

/**
 * Tears down what a fabric suite started (call in afterAll; a part beforeAll never reached is skipped): the admin
 * client, then the processes and temp dirs, then the fake backends.
 */
export async function stopFabric(
  group: ProcessGroup,
  admin: AdminClient | undefined,
  ...fakes: (FakeServer | undefined)[]
): Promise<void> {
  admin?.close();
  await group.close();
  for (const fake of fakes) await fake?.close();
}
