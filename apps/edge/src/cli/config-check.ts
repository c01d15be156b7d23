// `iop-edge config check`: validates edge.yaml. Exit 0 with a one-line summary (and a WARNING line for every
// allowed-but-unsafe setting: plaintext node link, allow_unauthenticated; and for provider capacities a node's
// max_concurrency caps), or 1 with every issue listed.
import { capacityWarnings, securityWarnings, type EdgeConfig } from '@iop/config';
import { parseFlags, stringFlag, writeLine, type CliCommand } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

export const configCheckCommand: CliCommand = {
  path: ['config', 'check'],
  summary: 'Validate edge.yaml and list every problem with its path and line.',
  usage: 'config check [--config P]',
  async run(argv, io) {
    const flags = parseFlags(argv, configFlag);
    const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
    if (!loaded) return 1;
    writeLine(io.stdout, `ok ${loaded.path} (${loaded.source}): ${summarizeConfig(loaded.config)}`);
    for (const warning of securityWarnings(loaded.config)) writeLine(io.stderr, `WARNING: ${warning}`);
    for (const warning of capacityWarnings(loaded.config)) writeLine(io.stderr, `WARNING: ${warning}`);
    return 0;
  },
};

export function summarizeConfig(config: EdgeConfig): string {
  const providers = config.nodes.flatMap((node) => node.providers);
  const enabled = providers.filter((provider) => provider.enabled).length;
  const surfaces = [
    `node transport ${config.edge.listen}`,
    config.openai.enabled ? `openai ${config.openai.listen}` : 'openai off',
    config.a2a.enabled ? `a2a ${config.a2a.listen}` : 'a2a off',
  ];
  return (
    `${plural(config.nodes.length, 'node')}, ${plural(providers.length, 'provider')} (${enabled} enabled), ` +
    `${plural(config.models.length, 'model')}; ${surfaces.join(', ')}`
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
