// The public agent card: what an A2A client discovers before calling. Served without auth; it announces the
// bearer scheme when a token is configured.
import type { AgentCard } from './a2a-types.js';

export const A2A_PROTOCOL_VERSION = '0.3.0';

export interface AgentCardInput {
  edgeId: string;
  version: string;
  /** Absolute URL of the JSON-RPC endpoint. */
  url: string;
  adapter: string;
  target: string;
  requiresToken: boolean;
}

export function buildAgentCard(input: AgentCardInput): AgentCard {
  const card: AgentCard = {
    name: `IOP edge ${input.edgeId}`,
    description: `Delegates tasks to the IOP execution group behind edge ${input.edgeId} (${input.adapter}/${input.target}).`,
    url: input.url,
    version: input.version,
    protocolVersion: A2A_PROTOCOL_VERSION,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: true },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: `${input.adapter}:${input.target}`,
        name: input.target,
        description: `Runs the task on the ${input.target} target of the ${input.adapter} adapter; messages with the same contextId continue one session.`,
        tags: [input.adapter, input.target],
      },
    ],
  };
  if (input.requiresToken) {
    card.securitySchemes = {
      bearer: { type: 'http', scheme: 'bearer', description: 'a2a.bearer_token of the edge' },
    };
    card.security = [{ bearer: [] }];
  }
  return card;
}
