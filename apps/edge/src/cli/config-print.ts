// `iop-edge config print`: the normalized config (defaults applied, legacy adapters folded) with secrets redacted.
import { renderConfig } from '@iop/config';
import { booleanFlag, parseFlags, stringFlag, type CliCommand } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

export const configPrintCommand: CliCommand = {
  path: ['config', 'print'],
  summary: 'Print the normalized config (YAML, or JSON with --json); secrets are redacted.',
  usage: 'config print [--config P] [--json]',
  async run(argv, io) {
    const flags = parseFlags(argv, { ...configFlag, json: { type: 'boolean' } });
    const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
    if (!loaded) return 1;
    io.stdout.write(renderConfig(loaded.config, booleanFlag(flags, 'json') ? 'json' : 'yaml'));
    return 0;
  },
};
