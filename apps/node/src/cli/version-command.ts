// `iop-node version`: the agent version, protocol version and platform (JSON with --json).
import { PROTOCOL_VERSION } from '@iop/wire';
import { booleanFlag, parseFlags, writeLine, type CliCommand } from './command.js';
import { AGENT_VERSION } from './version.js';

export const versionCommand: CliCommand = {
  path: ['version'],
  summary: 'print the agent and protocol versions',
  usage: 'version [--json]',
  run(argv, io) {
    const flags = parseFlags(argv, { json: { type: 'boolean' } });
    const info = {
      version: AGENT_VERSION,
      protocol_version: PROTOCOL_VERSION,
      node: process.versions.node,
      platform: `${process.platform}/${process.arch}`,
    };
    if (booleanFlag(flags, 'json')) writeLine(io.stdout, JSON.stringify(info));
    else {
      writeLine(
        io.stdout,
        `iop-node ${info.version} (protocol ${info.protocol_version}, node ${info.node}, ${info.platform})`,
      );
    }
    return Promise.resolve(0);
  },
};
