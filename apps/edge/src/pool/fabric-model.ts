// The model an agent's CLI profile reaches the pool's models through (`fabric_model` on a CLI profile: its model
// calls become child runs of that models[] id, agent-contract/inner/agent-runs.md). Read through this one accessor
// so the pool depends on the profile's field and nothing else about it.
import type { AdapterInstanceConfig } from '@iop/config';

/** The `fabric_model` of profile `target` of a cli adapter instance; undefined when it names none. */
export function fabricModelOf(
  instance: AdapterInstanceConfig | undefined,
  target: string,
): string | undefined {
  if (instance?.type !== 'cli') return undefined;
  const profile: object | undefined = instance.profiles[target];
  const value = profile && 'fabric_model' in profile ? profile.fabric_model : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}
