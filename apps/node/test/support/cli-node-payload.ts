// The node config an e2e fake edge hands a real `iop-node run`: one `cli` adapter with the test's profiles and no
// providers, so runs go straight to the profiles by name.
import type { CliProfile, NodeConfigPayload } from '@iop/wire';

export interface CliNodePayloadOptions {
  maxConcurrency: number;
  healthProbeIntervalMs: number;
  /** The agent user CLI processes run as; '' for the node's own user. */
  runAs: string;
  profiles: Record<string, CliProfile>;
}

export function cliNodePayload(options: CliNodePayloadOptions): NodeConfigPayload {
  return {
    nodeId: 'test-node',
    alias: 'test-node',
    maxConcurrency: options.maxConcurrency,
    revision: 'r1',
    healthProbeIntervalMs: options.healthProbeIntervalMs,
    providers: [],
    discovery: undefined,
    adapters: [
      {
        name: 'cli',
        type: 'cli',
        enabled: true,
        http: undefined,
        cli: {
          maxSessions: 4,
          sessionIdleTtlMs: 0,
          workspaceRoots: [],
          runAs: options.runAs,
          profiles: options.profiles,
        },
      },
    ],
  };
}
