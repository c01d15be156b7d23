import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { loadConfigFile } from '@iop/config';
import { SHIPPED_CLI_PROFILES } from './cli-profiles.js';

const EXAMPLE = fileURLToPath(new URL('../../../../configs/edge.yaml', import.meta.url));

describe('SHIPPED_CLI_PROFILES', () => {
  it('match the agents profiles of the shipped configs/edge.yaml (update both together)', async () => {
    const loaded = await loadConfigFile(EXAMPLE);
    if (!loaded.ok) throw new Error(`configs/edge.yaml does not load: ${JSON.stringify(loaded.issues)}`);
    const agents = loaded.config.nodes[0]?.adapters.instances.find((instance) => instance.name === 'agents');
    if (agents?.type !== 'cli') throw new Error('configs/edge.yaml lost its agents CLI instance');
    for (const [cli, shipped] of Object.entries(SHIPPED_CLI_PROFILES)) {
      for (const variant of [shipped, ...(shipped.fabric ? [shipped.fabric] : [])]) {
        const example = agents.profiles[variant.profile] as unknown as Record<string, unknown> | undefined;
        const written = Object.fromEntries(Object.keys(variant.settings).map((key) => [key, example?.[key]]));
        expect({ cli, settings: written }).toEqual({ cli, settings: variant.settings });
      }
    }
  });

  it('point claude, codex, opencode and cline at the run’s model endpoint in their fabric variants', async () => {
    const loaded = await loadConfigFile(EXAMPLE);
    if (!loaded.ok) throw new Error('configs/edge.yaml does not load');
    const agents = loaded.config.nodes[0]?.adapters.instances.find((instance) => instance.name === 'agents');
    if (agents?.type !== 'cli') throw new Error('no agents instance');
    for (const cli of ['claude', 'codex', 'opencode', 'cline']) {
      const fabric = SHIPPED_CLI_PROFILES[cli]?.fabric;
      const profile = fabric ? agents.profiles[fabric.profile] : undefined;
      expect({ cli, mode: profile?.mode, model: profile?.fabric_model }).toEqual({
        cli,
        mode: 'oneshot',
        model: 'qwen3.6:35b',
      });
      const text = JSON.stringify([profile?.args, profile?.env]);
      expect(text).toContain('{model_api_key}');
      expect(text).toMatch(/\{(model_base_url|anthropic_base_url)\}/);
    }
  });
});
