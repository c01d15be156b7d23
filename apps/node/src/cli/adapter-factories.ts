// The adapter types this build ships, wired to their real factories. The cli adapter gets the agent's working
// directory (relative commands and the default workspace) and environment (allow-listed by the adapter).
import type { AdapterFactory, AdapterType } from '../adapters/adapter.js';
import { createCliAdapter } from '../adapters/cli/cli-adapter.js';
import { createOllamaAdapter } from '../adapters/ollama/ollama-adapter.js';
import { createOpenAICompatAdapter } from '../adapters/openai-compat/openai-compat-adapter.js';

export function defaultAdapterFactories(context: {
  cwd: string;
  env: NodeJS.ProcessEnv;
}): Record<AdapterType, AdapterFactory> {
  return {
    cli: (instance, deps) =>
      createCliAdapter(instance, { ...deps, agentCwd: context.cwd, inheritedEnv: context.env }),
    ollama: createOllamaAdapter,
    openai_compat: createOpenAICompatAdapter,
  };
}
