// The adapter types this build ships, wired to their real factories. The cli adapter gets the agent's working
// directory (relative commands and the default workspace), environment (allow-listed by the adapter) and the
// node's default agent user (`--agent-user`) and which key each workspace belongs to (kept with the run history).
import type { AdapterFactory, AdapterType } from '../adapters/adapter.js';
import { createCliAdapter } from '../adapters/cli/cli-adapter.js';
import type { WorkspaceBindings } from '../history/workspace-bindings.js';
import { createOllamaAdapter } from '../adapters/ollama/ollama-adapter.js';
import { createOpenAICompatAdapter } from '../adapters/openai-compat/openai-compat-adapter.js';

export function defaultAdapterFactories(context: {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** `--agent-user`: the run_as of cli instances that set none. */
  agentUser?: string;
  /** Shared by every cli instance: a directory belongs to one key whichever instance it was used through. */
  workspaceBindings?: WorkspaceBindings;
}): Record<AdapterType, AdapterFactory> {
  return {
    cli: (instance, deps) =>
      createCliAdapter(instance, {
        ...deps,
        agentCwd: context.cwd,
        inheritedEnv: context.env,
        ...(context.agentUser ? { defaultRunAs: context.agentUser } : {}),
        ...(context.workspaceBindings ? { workspaceBindings: context.workspaceBindings } : {}),
      }),
    ollama: createOllamaAdapter,
    openai_compat: createOpenAICompatAdapter,
  };
}
