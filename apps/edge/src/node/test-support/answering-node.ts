// A registry holding one fake node that answers every RunRequest with fixed parts on the next turn and keeps the
// requests it received: for surface tests that need the real registry, pool and service, but no node process.
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { toWireRunEvent, type RunEventPart, type RunRequest } from '@iop/wire';
import { silentLogger } from '../../logging.js';
import { defaultNodePayload } from '../mapper.js';
import { NodeLink } from '../node-link.js';
import { createNodeRegistry, type NodeRegistry } from '../node-registry.js';
import { FakeChannel, linkInfo } from './fake-channel.js';

/** An edge config routing OpenAI model `model-a` to the answering node's `cli` adapter, target `target-a`. */
export const ANSWERING_NODE_CONFIG: EdgeConfig = (() => {
  const result = parseConfigText(
    `
openai:
  enabled: true
  model_routes: [{ model: model-a, adapter: cli, target: target-a }]
nodes: [{ id: node-1, adapters: { cli: { profiles: { target-a: { command: fake-a } } } } }]
`,
    'answering-node.yaml',
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
})();

/** "ok", then a complete event. */
export const OK_PARTS: readonly RunEventPart[] = [
  { type: 'text-delta', text: 'ok' },
  { type: 'complete', detail: '', finishReason: 'stop', backendMs: 1 },
];

export interface AnsweringNode {
  registry: NodeRegistry;
  /** RunRequests the node received, in order. */
  requests: RunRequest[];
}

export function startAnsweringNode(
  nodeId = 'node-1',
  parts: readonly RunEventPart[] = OK_PARTS,
): AnsweringNode {
  const registry = createNodeRegistry();
  const requests: RunRequest[] = [];
  const channel = new FakeChannel();
  const link = new NodeLink({
    channel,
    info: linkInfo(nodeId),
    payload: defaultNodePayload(nodeId),
    logger: silentLogger,
  });
  registry.add(link);
  channel.onSend((envelope) => {
    if (envelope.msg?.$case !== 'runRequest') return;
    const request = envelope.msg.runRequest;
    requests.push(request);
    setImmediate(() =>
      parts.forEach((part, index) =>
        link.handle({
          requestId: '',
          msg: { $case: 'runEvent', runEvent: toWireRunEvent(request.runId, index + 1, part) },
        }),
      ),
    );
  });
  return { registry, requests };
}
