// The public agent card: what an A2A client discovers before calling. Served without auth; it announces the
// bearer scheme when a token is configured. One card for both protocol versions: 0.3 clients read `url` and
// `protocolVersion`, 1.0 clients pick the `supportedInterfaces` entry of version 1.0 (same endpoint; the method
// names tell the versions apart, protocol-version.ts).
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
  /** Whether tasks/pushNotificationConfig/* and the 1.0 push-config methods are served. */
  pushNotifications?: boolean;
}

export function buildAgentCard(input: AgentCardInput): AgentCard {
  const card: AgentCard = {
    name: `IOP edge ${input.edgeId}`,
    description: `Delegates tasks to the IOP execution group behind edge ${input.edgeId} (${input.adapter}/${input.target}).`,
    url: input.url,
    version: input.version,
    protocolVersion: A2A_PROTOCOL_VERSION,
    preferredTransport: 'JSONRPC',
    supportedInterfaces: [
      { url: input.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: input.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: input.pushNotifications ?? false,
      stateTransitionHistory: true,
    },
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
    const description = 'a2a.bearer_token or an API key of the edge';
    card.securitySchemes = {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description,
        httpAuthSecurityScheme: { scheme: 'bearer', description },
      },
    };
    card.security = [{ bearer: [] }];
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return card;
}
