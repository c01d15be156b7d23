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
      const example = agents.profiles[shipped.profile] as unknown as Record<string, unknown> | undefined;
      const written = Object.fromEntries(Object.keys(shipped.settings).map((key) => [key, example?.[key]]));
      expect({ cli, settings: written }).toEqual({ cli, settings: shipped.settings });
    }
  });
});
